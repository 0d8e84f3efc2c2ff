"""Topic names and the properties the design needs of each topic.

The one place that knows jobstream's topics: processors ask it for names, and
``jobstream topics create`` (pipeline/kafka/admin.py) creates exactly what it lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from jobstream._pipeline.config import MAX_MESSAGE_BYTES, Settings
from jobstream._pipeline.tenancy import owner_intake

PRIORITIES = ("high", "normal", "low")

_HOUR_MS = 3600 * 1000
_DAY_MS = 24 * _HOUR_MS
_WEEK_MS = 7 * _DAY_MS
_YEAR_MS = 365 * _DAY_MS
CONTROL_RETENTION_MS = _DAY_MS
"""How long jobs.control keeps a cancel: a worker starting reads that far back, so a
record that waited up to this long in an execution topic still meets its cancel."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    compacted: bool = False
    retention_ms: int = _WEEK_MS
    expires: bool = False
    """A compacted topic whose records are also deleted after ``retention_ms``."""
    extra: dict[str, str] = field(default_factory=dict)
    may_grow: bool = False
    """Whether the topic may hold more partitions than ``partitions``: an execution topic of
    a type with no concurrency limit, grown by ``jobstream topics grow --exec-partitions``;
    jobs.events and its co-partitioned topics, grown by ``--events-partitions``."""

    @property
    def cleanup_policy(self) -> str:
        if self.compacted:
            return "compact,delete" if self.expires else "compact"
        return "delete"

    def config(self) -> dict[str, str]:
        config = {
            "cleanup.policy": self.cleanup_policy,
            "max.message.bytes": str(MAX_MESSAGE_BYTES),
        }
        if not self.compacted or self.expires:
            config["retention.ms"] = str(self.retention_ms)
        config.update(self.extra)
        return config


@dataclass(frozen=True)
class TopicBound:
    """At most ``most`` topics whose names start with ``prefix``, cluster-wide: a pure rule
    on the names the cluster holds, applied where topics are created on demand."""

    prefix: str
    most: int
    what: str
    """What the topics are, in a refusal: "execution topics"."""
    setting: str
    """The setting that sets ``most``, named in a refusal."""

    def refusals(self, present: Iterable[str], missing: Iterable[str]) -> dict[str, str]:
        """Which of ``missing`` (topics to create) would pass the bound, and why; those
        that fit are the first in name order."""
        held = sum(1 for name in present if name.startswith(self.prefix))
        refused = {}
        for name in sorted(set(missing)):
            if not name.startswith(self.prefix):
                continue
            if held >= self.most:
                refused[name] = (f"the cluster holds {held} {self.what}, the most "
                                 f"{self.setting} ({self.most}) allows")  # fmt: skip
            else:
                held += 1
        return refused


def routed(job_type: str, pool: str | None) -> str:
    """The part of the execution topics' names that routes a job: its type, and its pool."""
    return job_type if pool is None else f"{job_type}.pool-{pool}"


class Topics:
    """Names of every jobstream topic, with the configured prefix."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        p = settings.topic_prefix
        self.intake = f"{p}jobs.intake"
        self.intake_dlq = f"{p}jobs.intake.dlq"
        self.retry = f"{p}jobs.retry"
        self.timers_changelog = f"{p}jobs.timers.changelog"
        self.events = f"{p}jobs.events"
        self.status = f"{p}jobs.status"
        self.status_handover = f"{p}jobs.status.handover"
        self.workers = f"{p}jobs.workers"
        self.limits = f"{p}jobs.limits"
        self.quotas = f"{p}jobs.quotas"
        self.client_quotas = f"{p}jobs.client-quotas"
        self.control = f"{p}jobs.control"
        self.results = f"{p}jobs.results"
        self.logs = f"{p}jobs.logs"
        self.checkpoints = f"{p}jobs.checkpoints"
        self.triggers = f"{p}jobs.triggers"
        self.triggers_dlq = f"{p}jobs.triggers.dlq"
        self.clocks = f"{p}jobs.clocks"

    def execution(self, job_type: str, priority: str, pool: str | None = None) -> str:
        """``jobs.exec.<type>.<priority>``: one topic per job type and priority tier; a
        pool's jobs of the type have their own, ``jobs.exec.<type>.pool-<pool>.<priority>``
        (no type has a ``-`` in its name, so no type's topics are a pool's)."""
        prefix = self.settings.topic_prefix
        return f"{prefix}jobs.exec.{routed(job_type, pool)}.{priority.lower()}"

    def owner_intake(self, owner: str) -> str:
        """``jobs.intake.owner.<owner>``: the one intake topic an owner's principal may
        write (pipeline/tenancy.py); co-partitioned with jobs.intake, made per owner."""
        return owner_intake(self.settings.topic_prefix, owner)

    def owner_intake_spec(self, owner: str, partitions: int) -> TopicSpec:
        """An owner's intake topic, with as many partitions as jobs.intake has (live: it
        may have grown past the setting)."""
        return TopicSpec(self.owner_intake(owner), partitions)

    def dead_letter(self, job_type: str) -> str:
        return f"{self.settings.topic_prefix}jobs.dlq.{job_type}"

    def job_type_specs(self, job_type: str, pool: str | None = None) -> Iterator[TopicSpec]:
        """The topics a job type (in a pool) needs: its execution tiers and its dead-letter
        topic (one per type, whatever the pool)."""
        s = self.settings
        # A limited type's slots are split over exactly JOBSTREAM_EXEC_PARTITIONS indices.
        may_grow = job_type.partition(".pool-")[0] not in s.concurrency_limits
        for priority in PRIORITIES:
            yield TopicSpec(self.execution(job_type, priority, pool), s.exec_partitions,
                            may_grow=may_grow)  # fmt: skip
        yield TopicSpec(self.dead_letter(job_type), s.dlq_partitions, retention_ms=_YEAR_MS)

    def specs(self) -> list[TopicSpec]:
        """Every topic of the design, for the configured job types."""
        s = self.settings
        specs = [
            TopicSpec(self.intake, s.timer_partitions),
            TopicSpec(self.intake_dlq, s.dlq_partitions, retention_ms=_YEAR_MS),
            # Retries feed the timers, so jobs.retry is co-partitioned with jobs.intake.
            TopicSpec(self.retry, s.timer_partitions),
            TopicSpec(self.timers_changelog, s.timer_partitions, compacted=True),
            # jobs.events and the status processor's topics co-partitioned with it may have
            # grown past the setting (`jobstream topics grow --events-partitions`).
            TopicSpec(self.events, s.events_partitions, retention_ms=_YEAR_MS, may_grow=True),
            # Each job's status, and the status processor's changelog: co-partitioned with
            # jobs.events (docs/adr/0014-jobs-status-is-the-status-changelog.md).
            TopicSpec(self.status, s.events_partitions, compacted=True, may_grow=True),
            # Jobs handed between its stores when jobs.events grows (pipeline/status/handover.py).
            TopicSpec(self.status_handover, s.events_partitions, may_grow=True),
            TopicSpec(self.workers, s.workers_partitions, compacted=True),
            # Rate limits, keyed by whom they limit; every timer process reads it whole.
            TopicSpec(self.limits, 1, compacted=True),
            # Quotas per owner, keyed by owner; every API process reads it whole.
            TopicSpec(self.quotas, 1, compacted=True),
            # Who set each principal's Kafka client quotas, keyed by principal (ops/kafka).
            TopicSpec(self.client_quotas, 1, compacted=True),
            # Event triggers, keyed by owner and name; every trigger processor reads it whole.
            TopicSpec(self.triggers, 1, compacted=True),
            # Source records a trigger could not read, with the reason (pipeline/triggers).
            TopicSpec(self.triggers_dlq, s.dlq_partitions, retention_ms=_YEAR_MS),
            # Clock probes, stamped by the broker (pipeline/kafka/clock_watch.py); never read.
            TopicSpec(self.clocks, 1, retention_ms=_HOUR_MS,
                      extra={"message.timestamp.type": "LogAppendTime"}),
            # Cancels of runs under way; every worker reads it whole (pipeline/worker/control.py).
            self.control_spec(),
            self.results_spec(),
            self.logs_spec(),
            self.checkpoints_spec(),
        ]
        for job_type in s.job_types:
            specs.extend(self.job_type_specs(job_type))
        return specs

    def control_spec(self) -> TopicSpec:
        """jobs.control: rare records that every worker reads, so one partition."""
        return TopicSpec(self.control, 1, retention_ms=CONTROL_RETENTION_MS)

    def results_spec(self) -> TopicSpec:
        """jobs.results: each run's result, keyed by job id (pipeline/worker/results.py).
        Compacted, so a job's latest result stays; deleted after the retention, so none
        stays for ever. A run's result is readable by offset (the API's index) until a
        later run of the same job replaces it, and for at least a day after it was
        written: compaction leaves records younger than ``min.compaction.lag.ms``."""
        s = self.settings
        return TopicSpec(self.results, s.results_partitions, compacted=True, expires=True,
                         retention_ms=s.results_retention,
                         extra={"min.compaction.lag.ms": str(min(_DAY_MS, s.results_retention))})

    def logs_spec(self) -> TopicSpec:
        """jobs.logs: each ended run's log lines, keyed by job id (pipeline/worker/runlogs.py).
        Deleted after the retention, not compacted: every run's lines stay readable until
        then, a retry's beside the first attempt's."""
        s = self.settings
        return TopicSpec(self.logs, s.logs_partitions, retention_ms=s.logs_retention)

    def checkpoints_spec(self) -> TopicSpec:
        """jobs.checkpoints: each job's latest checkpoint (``ctx.checkpoint``), keyed by job
        id (docs/adr/0006-checkpoints.md). Compacted, with a tombstone when the job succeeds;
        deleted after a week, so the checkpoint of a job that ended otherwise does not stay
        for ever (its next attempt finds it on its ExecutionRequested, not here)."""
        return TopicSpec(self.checkpoints, self.settings.events_partitions, compacted=True,
                         expires=True)

    def spec_of(self, name: str) -> TopicSpec | None:
        """The spec of topic ``name``: one of the design's, or a job type's (any type)."""
        for spec in self.specs():
            if spec.name == name:
                return spec
        job_type = self.job_type_of(name)
        if job_type is None:
            return None
        return next((s for s in self.job_type_specs(job_type) if s.name == name), None)

    def execution_bound(self) -> TopicBound:
        """The cluster-wide bound on execution topics (``JOBSTREAM_MAX_EXECUTION_TOPICS``)."""
        return TopicBound(f"{self.settings.topic_prefix}jobs.exec.",
                          self.settings.max_execution_topics, "execution topics",
                          "JOBSTREAM_MAX_EXECUTION_TOPICS")  # fmt: skip

    def job_type_of(self, name: str) -> str | None:
        """The job type (with its pool, ``<type>.pool-<pool>``) of an execution or
        dead-letter topic; None for any other topic."""
        p = self.settings.topic_prefix
        if name.startswith(f"{p}jobs.exec."):
            return name.removeprefix(f"{p}jobs.exec.").rpartition(".")[0]
        if name.startswith(f"{p}jobs.dlq."):
            return name.removeprefix(f"{p}jobs.dlq.")
        return None
