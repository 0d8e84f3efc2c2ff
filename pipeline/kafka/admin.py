"""Create jobstream's topics, or check that existing ones are as the design needs.

Idempotent: a topic that exists with the right partition count and cleanup policy is
left alone; one that differs is reported, never altered (changing either would break
co-partitioning or lose data), and the command fails naming every difference.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from pipeline.errors import TopicMismatchError
from pipeline.topics import TopicSpec

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
    timeout_s: float = 30.0,
) -> TopicReport:
    """Create the missing topics and verify the existing ones."""
    admin = AdminClient(dict(kafka_config))
    specs = list(specs)
    present = admin.list_topics(timeout=timeout_s).topics
    report = TopicReport()

    missing = [spec for spec in specs if spec.name not in present]
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(s.name, s.partitions, replication_factor, config=s.config())
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
                if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":  # lost a race: verify below
                    raise
        present = _wait_visible(admin, [spec.name for spec in specs], timeout_s)

    existing = [spec for spec in specs if spec.name not in report.created]
    problems = _differences(admin, existing, present, timeout_s)
    if problems:
        raise TopicMismatchError(
            "existing topics differ from what jobstream needs:\n  " + "\n  ".join(problems)
        )
    report.existing = [spec.name for spec in existing]
    log.info("topics ready created=%d existing=%d", len(report.created), len(report.existing))
    return report


def _wait_visible(admin: AdminClient, names: list[str], timeout_s: float) -> dict[str, Any]:
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


def _differences(
    admin: AdminClient, specs: list[TopicSpec], present: Mapping[str, Any], timeout_s: float
) -> list[str]:
    if not specs:
        return []
    problems = []
    resources = [ConfigResource(ConfigResource.Type.TOPIC, spec.name) for spec in specs]
    configs = admin.describe_configs(resources, request_timeout=timeout_s)
    for spec, resource in zip(specs, resources, strict=True):
        partitions = len(present[spec.name].partitions)
        if partitions != spec.partitions:
            problems.append(f"{spec.name}: {partitions} partitions, expected {spec.partitions}")
        policy = configs[resource].result()["cleanup.policy"].value
        if policy != spec.cleanup_policy:
            problems.append(f"{spec.name}: cleanup.policy={policy}, expected {spec.cleanup_policy}")
    return problems
