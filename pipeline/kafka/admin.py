"""Create jobstream's topics, check that existing ones are as the design needs, and grow
their partition counts (``jobstream topics grow``).

Idempotent: a topic that exists with the right partition count and cleanup policy is
left alone; one that differs is reported, never altered (changing either would break
co-partitioning or lose data), and the command fails naming every difference. A name the
broker refuses because it collides with an existing topic (Kafka treats ``.`` and ``_``
alike in names) is reported with the topic it collides with (TopicRefusedError), after
the other topics have been created and checked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    TopicMetadata,
)

from jobstream._pipeline.errors import TopicMismatchError, TopicRefusedError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import TopicBound, TopicSpec

log = logging.getLogger(__name__)


@dataclass
class TopicReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)


def ensure_topics(
    kafka_config: Mapping[str, str | int],
    specs: Iterable[TopicSpec],
    *,
    replication_factor: int = 1,
    min_insync_replicas: int | None = None,
    timeout_s: float = 30.0,
    bound: TopicBound | None = None,
) -> TopicReport:
    """Create the missing topics and verify the existing ones. Missing topics that
    ``bound`` holds back are refused (TopicRefusedError) as the broker's refusals are.
    ``min_insync_replicas`` is set on each topic created (None: the broker's default)."""
    admin = clients.admin_client(kafka_config)
    specs = list(specs)
    present = admin.list_topics(timeout=timeout_s).topics
    report = TopicReport()

    missing = [spec for spec in specs if spec.name not in present]
    refused: dict[str, str] = {}
    if bound is not None and missing:
        refused = bound.refusals(present, (spec.name for spec in missing))
        missing = [spec for spec in missing if spec.name not in refused]
        specs = [spec for spec in specs if spec.name not in refused]
    if missing:
        durability = ({"min.insync.replicas": str(min_insync_replicas)}
                      if min_insync_replicas is not None else {})  # fmt: skip
        futures = admin.create_topics(
            [
                NewTopic(s.name, s.partitions, replication_factor,
                         config=s.config() | durability)
                for s in missing
            ],
            operation_timeout=timeout_s,
            request_timeout=timeout_s,
        )
        for name, future in futures.items():
            try:
                future.result()
                report.created.append(name)
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError.TOPIC_EXCEPTION:
                    refused[name] = _refusal(name, present, exc.args[0].str())
                elif exc.args[0].name() != "TOPIC_ALREADY_EXISTS":  # lost a race: verify below
                    raise
        specs = [spec for spec in specs if spec.name not in refused]
        present = _wait_visible(admin, [spec.name for spec in specs], timeout_s)

    existing = [spec for spec in specs if spec.name not in report.created]
    problems = _differences(admin, existing, present, timeout_s)
    if problems:
        raise TopicMismatchError(
            "existing topics differ from what jobstream needs:\n  " + "\n  ".join(problems)
        )
    report.existing = [spec.name for spec in existing]
    log.info("topics ready created=%d existing=%d", len(report.created), len(report.existing))
    if refused:
        raise TopicRefusedError(refused)
    return report


def colliding(name: str, present: Iterable[str]) -> list[str]:
    """The topics Kafka holds to collide with ``name``: the same once ``.`` reads ``_``."""
    folded = name.replace(".", "_")
    return sorted(other for other in present if other != name
                  and other.replace(".", "_") == folded)  # fmt: skip


def _refusal(name: str, present: Mapping[str, TopicMetadata], broker_says: str) -> str:
    others = colliding(name, present)
    if others:
        return f"collides with existing topic {', '.join(others)}"
    return broker_says


def _wait_visible(admin: AdminClient, names: list[str],
                  timeout_s: float) -> dict[str, TopicMetadata]:  # fmt: skip
    """Metadata lags a creation briefly; wait until every topic shows with its partitions."""
    deadline = time.monotonic() + timeout_s
    while True:
        present = admin.list_topics(timeout=timeout_s).topics
        if all(name in present and present[name].partitions for name in names):
            return present
        if time.monotonic() > deadline:
            missing = [name for name in names if name not in present]
            raise TopicMismatchError(f"topics not visible after creation: {missing}")
        time.sleep(0.1)


def partition_problem(spec: TopicSpec, found: int) -> str | None:
    """What is wrong with an existing topic of ``found`` partitions, if anything: another
    count than the spec's, unless it may grow and has grown."""
    if found == spec.partitions or (spec.may_grow and found > spec.partitions):
        return None
    return f"{spec.name}: {found} partitions, expected {spec.partitions}"


def _differences(
    admin: AdminClient, specs: list[TopicSpec], present: Mapping[str, TopicMetadata],
    timeout_s: float,
) -> list[str]:
    if not specs:
        return []
    problems = []
    resources = [ConfigResource(ConfigResource.Type.TOPIC, spec.name) for spec in specs]
    configs = admin.describe_configs(resources, request_timeout=timeout_s)
    for spec, resource in zip(specs, resources, strict=True):
        problem = partition_problem(spec, len(present[spec.name].partitions))
        if problem:
            problems.append(problem)
        policy = configs[resource].result()["cleanup.policy"].value
        if policy != spec.cleanup_policy:
            problems.append(f"{spec.name}: cleanup.policy={policy}, expected {spec.cleanup_policy}")
    return problems


def partition_counts(admin: AdminClient, names: Iterable[str],
                     timeout_s: float) -> dict[str, int]:  # fmt: skip
    """The partition count of each of ``names`` the cluster holds (those it does not are
    left out)."""
    found = admin.list_topics(timeout=timeout_s).topics
    return {name: len(found[name].partitions) for name in names if name in found}


def create_partitions(admin: AdminClient, names: list[str], target: int,
                      timeout_s: float) -> None:  # fmt: skip
    """Grow every topic of ``names`` to ``target`` partitions in one request, and wait
    until the metadata shows them all; TopicMismatchError naming the topic the broker
    refused, or the wait that ran out (running the grow again finishes it)."""
    futures = admin.create_partitions(
        [NewPartitions(name, target) for name in names],
        operation_timeout=timeout_s, request_timeout=timeout_s,
    )  # fmt: skip
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            raise TopicMismatchError(f"{name}: could not grow to {target} partitions: "
                                     f"{exc.args[0].str()}") from exc  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while partition_counts(admin, names, timeout_s) != dict.fromkeys(names, target):
        if time.monotonic() > deadline:
            raise TopicMismatchError(f"{', '.join(names)}: {target} partitions not visible "
                                     f"after {timeout_s:.0f} s")  # fmt: skip
        time.sleep(0.1)
