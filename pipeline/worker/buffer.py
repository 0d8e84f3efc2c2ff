"""One tier's buffer of fetched records: a queue per partition, served in turn.

librdkafka hands a consumer everything it has fetched of one partition before the next
partition's records (a fetched batch of thousands comes whole), so a single queue would
run one partition's records first and the other partitions' would wait, the jobs fair
firing put at their front included (docs/fairness.md). Served in turn, each partition's
head starts within a few records of the others'. :meth:`TierBuffer.hoarding` names the
partitions holding more than their share, for the lane to pause: a paused partition's
fetched-ahead records are dropped by librdkafka, which lets the others' through.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from jobstream._pipeline.worker.offsets import Partition

T = TypeVar("T")


class TierBuffer(Generic[T]):
    def __init__(self) -> None:
        self._queues: dict[Partition, deque[T]] = {}
        """Partitions with records, in the order they are next served."""
        self._sizes: dict[Partition, int] = {}
        self.bytes = 0

    def append(self, partition: Partition, item: T, size: int) -> None:
        self._queues.setdefault(partition, deque()).append(item)
        self._sizes[partition] = self._sizes.get(partition, 0) + size
        self.bytes += size

    def popleft(self, size_of: Callable[[T], int], partition: Partition | None = None) -> T:
        """The next record of ``partition``, by default of the partition whose turn it is;
        IndexError when empty. The partition served goes to the back of the turn."""
        if partition is None:
            partition = next(iter(self._queues))
        queue = self._queues.pop(partition)
        item = queue.popleft()
        if queue:
            self._queues[partition] = queue  # back of the turn
        size = size_of(item)
        self._sizes[partition] -= size
        self.bytes -= size
        return item

    def first(self, ready: Callable[[Partition], bool]) -> Partition | None:
        """The first partition in turn that holds records and is ``ready``."""
        return next((partition for partition in self._queues if ready(partition)), None)

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop the records of revoked partitions."""
        for partition in set(partitions):
            self._queues.pop(partition, None)
            self.bytes -= self._sizes.pop(partition, 0)

    def held(self, partition: Partition) -> int:
        queue = self._queues.get(partition)
        return 0 if queue is None else len(queue)

    def hoarding(self, share: int, paused: frozenset[Partition]) -> frozenset[Partition]:
        """Partitions to keep paused: those holding ``share`` records or more, and those
        already paused until half of their share has started (the hysteresis of
        pipeline/worker/pauses.py's :func:`full_tiers`, for the same reason)."""
        return frozenset(
            partition for partition, queue in self._queues.items()
            if len(queue) >= share or (partition in paused and len(queue) > share // 2)
        )  # fmt: skip

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def __bool__(self) -> bool:
        return bool(self._queues)
