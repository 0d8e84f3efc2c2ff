"""The slots of one lane: how many runs each partition index may hold at once here.

A job type with a fleet-wide limit (pipeline/concurrency.py) has its slots split over
the partition indices of its execution topics. A run holds the slot of its record's
index from the moment it is added to the runs in flight until its handler returns (a
timed-out sync handler keeps it until its thread ends), whichever of the three tiers
the record came from: the tiers of an index share its slots. The count is kept by
index, not by assignment, so an index revoked and assigned back while one of its runs
still runs here still counts that run.

For a type with no limit every index is always free.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from jobstream._pipeline.concurrency import ConcurrencyLimits

log = logging.getLogger(__name__)

K = TypeVar("K")


def count_down(counts: dict[K, int], key: K) -> None:
    """One fewer ``key`` in ``counts``; a key with none left goes, so ``in`` tells if any are."""
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


class PartitionSlots:
    def __init__(self, job_type: str, limits: ConcurrencyLimits) -> None:
        self.job_type = job_type
        self.limit = limits.limit_of(job_type)
        self._capacity = ([limits.slots(job_type, p) or 0 for p in range(limits.partitions)]
                          if self.limit is not None else [])  # fmt: skip
        self._running: dict[int, int] = {}
        self._warned: set[int] = set()

    @property
    def limited(self) -> bool:
        return self.limit is not None

    @property
    def in_use(self) -> int:
        """Runs holding a slot of this lane."""
        return sum(self._running.values())

    def capacity(self, partition: int) -> int | None:
        """Slots of an index; None: no limit. An index beyond the configured partition
        count (a topic with more partitions than the setting says) has none."""
        if self.limit is None:
            return None
        return self._capacity[partition] if partition < len(self._capacity) else 0

    def free(self, partition: int) -> bool:
        capacity = self.capacity(partition)
        return capacity is None or self._running.get(partition, 0) < capacity

    def take(self, partition: int) -> None:
        if self.limit is not None:
            self._running[partition] = self._running.get(partition, 0) + 1

    def give(self, partition: int) -> None:
        if self.limit is not None:
            count_down(self._running, partition)

    def check_fetched(self, partition: int) -> None:
        """Warn (once per index) about records on an index that carries no slot: they
        wait there for good, because the timers route with another limit or partition
        count than this worker reads."""
        if partition in self._warned or self.capacity(partition) != 0:
            return
        self._warned.add(partition)
        log.warning(
            "executions on a partition with no slot wait until the limits agree: the timers "
            "and the workers must read the same JOBSTREAM_CONCURRENCY_LIMITS and "
            "JOBSTREAM_EXEC_PARTITIONS",
            extra={"job_type": self.job_type, "partition": partition, "limit": self.limit},
        )  # fmt: skip
