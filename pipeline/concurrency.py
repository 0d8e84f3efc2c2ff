"""Fleet-wide concurrency limits per job type, as slots carried by partitions.

A type limited to N runs at once has N slots, split over the partition indices of its
execution topics (:func:`slot_count`). Kafka gives each partition of the workers' group to
one member at a time, and the range assignor gives index p of all three priority tiers to
the same member, so a worker that runs at most its indices' slots at once keeps the whole
fleet at N or under. When N is smaller than the partition count, the indices from N up
carry no slot, and the timers route the type's executions to the first N only
(:meth:`ConcurrencyLimits.partition_for`). docs/adr/0003-concurrency-limits.md has the
design, its guarantee and its limits.

Timers and workers both read ``JOBSTREAM_CONCURRENCY_LIMITS`` and
``JOBSTREAM_EXEC_PARTITIONS``: they must agree, or executions land on partitions the
workers give no slot (the workers log it). Pure, no Kafka: unit-tested directly.

A job with a concurrency key (docs/keys.md) is routed by its key instead
(:func:`keyed_partition`): every run of one key, whatever its job, meets on one partition
index, whose one owner counts the key's runs (pipeline/worker/keyed.py,
docs/adr/0008-concurrency-keys.md).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.keys import scoped
from jobstream._pipeline.model.records import JobSpec

SETTING = "JOBSTREAM_CONCURRENCY_LIMITS"


def slot_count(limit: int, partition: int, partitions: int) -> int:
    """Slots of partition index ``partition`` out of ``partitions``, for a limit of ``limit``:
    an even split, the remainder going to the lowest indices, so the counts sum to
    ``limit`` and indices from ``limit`` up get none when the limit is below the count."""
    if not 0 <= partition < partitions:
        raise ValueError(f"partition {partition} is outside 0..{partitions - 1}")
    return limit // partitions + (1 if partition < limit % partitions else 0)


def routed_partition(limit: int, key: bytes, partitions: int) -> int | None:
    """Where the timers put an execution of a type limited to ``limit``: None (the
    producer's partitioner, as for any type) when every partition has a slot, otherwise
    one of the first ``limit`` partitions, chosen by the key so that the runs of a job
    (and of a workflow) keep meeting in one partition."""
    if limit >= partitions:
        return None
    return zlib.crc32(key) % limit


def keyed_partition(scoped_key: str, partitions: int, limit: int | None = None) -> int:
    """Where the timers put an execution of a job with a concurrency key: the partition
    index chosen by the key (:func:`jobstream._pipeline.model.keys.scoped`), among the
    first ``limit`` indices when the job's type is limited below the partition count (the
    indices that carry its slots), else among all ``partitions``. Every run of a key meets
    on that one index, whatever job, tier or retry it belongs to."""
    spread = partitions if limit is None else min(limit, partitions)
    return zlib.crc32(scoped_key.encode()) % spread


def concurrency_key_of(spec: JobSpec) -> str | None:
    """The job's concurrency key as the fleet counts it (scoped by its owner), if any."""
    keys = spec.job_keys
    if keys is None or keys.concurrency_key is None:
        return None
    return scoped(spec.owner, keys.concurrency_key)


@dataclass(frozen=True)
class ConcurrencyLimits:
    """The limited job types and the partition count their slots are split over."""

    limits: Mapping[str, int] = field(default_factory=dict)
    """Most runs at once of each limited type, across every worker; types not named have
    no limit."""
    partitions: int = 1
    """Partitions of each execution topic (``JOBSTREAM_EXEC_PARTITIONS``)."""

    def __post_init__(self) -> None:
        self._validate()

    @classmethod
    def of(cls, settings: Settings) -> ConcurrencyLimits:
        """The limits a process reads at start; ConfigurationError naming the setting."""
        return cls(settings.concurrency_limits, settings.exec_partitions)

    def _validate(self) -> None:
        if self.partitions < 1:
            raise ConfigurationError(f"partitions must be at least 1, got {self.partitions}")
        for job_type, limit in self.limits.items():
            try:
                rules.job_type(job_type)
            except ValueError as exc:
                raise ConfigurationError(f"invalid setting: {SETTING}: job type {exc}") from None
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ConfigurationError(
                    f"invalid setting: {SETTING}: the limit of {job_type} "
                    f"must be a whole number of at least 1, got {limit!r}"
                )

    def limit_of(self, job_type: str) -> int | None:
        return self.limits.get(job_type)

    def slots(self, job_type: str, partition: int) -> int | None:
        """Slots of a partition index of the type's execution topics; None: no limit."""
        limit = self.limits.get(job_type)
        return None if limit is None else slot_count(limit, partition, self.partitions)

    def partition_for(self, job_type: str, key: bytes) -> int | None:
        """The execution partition of a job of ``job_type`` keyed ``key``; None leaves it
        to the producer's partitioner."""
        limit = self.limits.get(job_type)
        return None if limit is None else routed_partition(limit, key, self.partitions)

    def route(self, spec: JobSpec, key: bytes) -> int | None:
        """The execution partition of a job: by its concurrency key if it has one (within
        its type's slots when the type is limited too), else as :meth:`partition_for`."""
        scoped_key = concurrency_key_of(spec)
        if scoped_key is None:
            return self.partition_for(spec.job_type, key)
        return keyed_partition(scoped_key, self.partitions, self.limits.get(spec.job_type))
