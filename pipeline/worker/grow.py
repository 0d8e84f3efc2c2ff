"""``jobstream topics grow --exec-partitions``: more partitions for job types' execution
topics, so that more workers of a type get work (a worker without a partition of a tier
gets none of its jobs).

Nothing is keyed to an execution partition but what the timers route there themselves:

- a type with no concurrency limit and a job with no concurrency key are left to the
  timers' producer, whose partitioner spreads them over the new partitions once it has
  seen them (its metadata refresh, pipeline/kafka/clients.py ``GROWN_PARTITIONS_SEEN``);
  the workers' group rebalances at its own refresh and reads a new partition from its
  start (``auto.offset.reset=earliest``), so nothing written there before is skipped;
- a job with a concurrency key goes to ``keyed_partition(key, JOBSTREAM_EXEC_PARTITIONS)``
  (docs/adr/0008-concurrency-keys.md): it keeps its partition, among the first
  ``JOBSTREAM_EXEC_PARTITIONS``, until the setting changes;
- a type with a concurrency limit splits its slots over ``JOBSTREAM_EXEC_PARTITIONS``
  indices (docs/adr/0003-concurrency-limits.md), in the timers and in every worker: its
  topics grow only while the timers and the type's workers are stopped (their groups have
  no member), and every limited type grows with it, since the setting, which must then
  change, is one for all of them.

Every topic grows in one request; running the command again finishes a grow that stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError, ValidationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import create_partitions
from jobstream._pipeline.model import rules
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.topics import PRIORITIES, Topics
from jobstream._pipeline.worker.lane import worker_group

log = logging.getLogger(__name__)

OPTION = "--exec-partitions"


@dataclass(frozen=True)
class ExecGrowPlan:
    """What a grow of execution topics to ``target`` partitions does."""

    target: int
    counts: Mapping[str, int]
    """Each execution topic of the types grown, with its partition count now."""
    limited: tuple[str, ...] = ()
    """The limited types grown: ``JOBSTREAM_EXEC_PARTITIONS`` must become ``target``."""

    @property
    def to_grow(self) -> list[str]:
        return sorted(name for name, count in self.counts.items() if count < self.target)

    @property
    def nothing_to_do(self) -> bool:
        return not self.to_grow


def execution_topics(topics: Topics, job_type: str, present: Iterable[str]) -> list[str]:
    """The type's execution topics the cluster holds: its three tiers and each pool's."""
    tiers = {topics.execution(job_type, priority) for priority in PRIORITIES}
    pools = f"{topics.settings.topic_prefix}jobs.exec.{job_type}.pool-"  # no type has a '-'
    return sorted(name for name in present if name in tiers or name.startswith(pools))


def plan_exec_grow(topics: Topics, job_types: Collection[str], counts: Mapping[str, int],
                   target: int) -> ExecGrowPlan:  # fmt: skip
    """The execution topics of ``job_types`` (of every configured type when none is named)
    to grow to ``target``, from the cluster's partition ``counts``; ValidationError naming
    the option at fault."""
    settings = topics.settings
    types = tuple(job_types) or settings.job_types
    if not types:
        raise ValidationError("--type", "no job type named, and none configured "
                              "(JOBSTREAM_JOB_TYPES)")  # fmt: skip
    for job_type in types:
        try:
            rules.job_type(job_type)
        except ValueError as exc:
            raise ValidationError("--type", f"{job_type!r}: {exc}") from None
    found: dict[str, int] = {}
    for job_type in types:
        names = execution_topics(topics, job_type, counts)
        missing = sorted({topics.execution(job_type, p) for p in PRIORITIES} - set(names))
        if missing:
            raise TopicMismatchError(f"no topic {', '.join(missing)}: `jobstream topics "
                                     "create` (or the type's first worker) makes it")  # fmt: skip
        found.update((name, counts[name]) for name in names)
    above = {name: count for name, count in found.items() if count > target}
    if above:
        raise ValidationError(OPTION, f"{target} is fewer partitions than {above} have: "
                              "Kafka adds partitions, never removes them")  # fmt: skip
    limited = tuple(t for t in types if t in settings.concurrency_limits)
    plan = ExecGrowPlan(target, found, limited)
    if limited and not plan.nothing_to_do:
        others = sorted(set(settings.concurrency_limits) - set(types))
        if others:
            raise ValidationError(OPTION, f"{', '.join(limited)} has a concurrency limit, "
                                  "split over JOBSTREAM_EXEC_PARTITIONS, one count for every "
                                  f"limited type: grow {', '.join(others)} with it "
                                  "(`--type` each)")  # fmt: skip
    return plan


def refuse_running(plan: ExecGrowPlan, members: Mapping[str, int]) -> None:
    """A limited type grows only while nothing splits its slots: ``members`` (each group
    that must be empty, with its member count) all 0, or ValidationError saying how."""
    busy = {group: count for group, count in members.items() if count}
    if busy:
        raise ValidationError(OPTION, (
            f"{', '.join(plan.limited)} has a concurrency limit, whose slots the timers and "
            "the workers split over JOBSTREAM_EXEC_PARTITIONS: stop the timers and the "
            f"type's workers first (groups still with members: {busy}; a stopped timer "
            "process leaves its group after 6 s), grow, then set "
            f"JOBSTREAM_EXEC_PARTITIONS={plan.target} for the timers and every worker "
            "alike and start them (docs/scaling.md, \"Growing the execution topics\")"))


def grow_execution_topics(settings: Settings, target: int, job_types: Collection[str] = (),
                          *, timeout_s: float = 30.0) -> ExecGrowPlan:  # fmt: skip
    """Grow the execution topics of ``job_types`` (default: every configured type) to
    ``target`` partitions, in one request."""
    topics = Topics(settings)
    admin = clients.admin_client(settings.kafka_config)
    counts = {name: len(topic.partitions)
              for name, topic in admin.list_topics(timeout=timeout_s).topics.items()}
    plan = plan_exec_grow(topics, job_types, counts, target)
    if plan.nothing_to_do:
        return plan
    if plan.limited:
        routes = {topics.job_type_of(name) or "" for name in plan.counts}
        groups = [processor_group(settings.topic_prefix, "timers")]
        groups += sorted(worker_group(settings.topic_prefix, route) for route in routes
                         if route.partition(".pool-")[0] in plan.limited)  # fmt: skip
        refuse_running(plan, _members(admin, groups, timeout_s))
    create_partitions(admin, plan.to_grow, target, timeout_s)
    log.info("execution topics grown", extra={"topics": plan.to_grow, "to": target})
    return plan


def _members(admin: AdminClient, groups: list[str], timeout_s: float) -> dict[str, int]:
    """Each group's member count (0 for a group the broker does not know)."""
    found = {}
    for group, future in admin.describe_consumer_groups(groups,
                                                        request_timeout=timeout_s).items():
        try:
            described = future.result()
        except KafkaException as exc:
            raise TopicMismatchError(f"could not describe group {group}: {exc}") from exc
        found[group] = (0 if described.state in (ConsumerGroupState.EMPTY,
                                                 ConsumerGroupState.DEAD)
                        else len(described.members))  # fmt: skip
    return found
