"""Which input offsets a worker may commit, records being done out of order.

Kafka commits one offset per partition: "everything below this is done". A record is
done here once it is started (claimed: its offset commits with its STARTED, before its
handler runs) or settled without a run (skipped, refused, unreadable). Records wait in
buffers by tier and turn, so they are done in any order, and the offset committed is the
lowest offset fetched but not yet done (or one past the last fetched when nothing is
pending). A record fetched but not done when the worker dies is fetched again by the
partition's next owner; a started one never is (pipeline/worker/loop.py).

Assignments come and go with rebalances. Each assignment of a partition gets a new
incarnation number, carried by every :class:`OffsetRef`, so a job that finishes after its
partition was revoked (and perhaps assigned back) cannot move the new owner's watermark.

Pure bookkeeping, no Kafka calls: unit-tested directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import NamedTuple

Partition = tuple[str, int]


class OffsetRef(NamedTuple):
    """One fetched record: where it came from, and under which assignment.

    A named tuple rather than a frozen dataclass: one is made per record fetched, at a
    third of the cost.
    """

    topic: str
    partition: int
    offset: int
    incarnation: int


@dataclass(slots=True)
class _PartitionState:
    incarnation: int
    pending: set[int] = field(default_factory=set)
    next_offset: int | None = None
    """One past the highest offset fetched; None until the first record arrives."""
    committed: int | None = None


class OffsetTracker:
    """Pending offsets per assigned partition, and the watermarks safe to commit."""

    def __init__(self) -> None:
        self._partitions: dict[Partition, _PartitionState] = {}
        self._incarnations = count(1)

    def assign(self, topic: str, partition: int) -> None:
        self._partitions[(topic, partition)] = _PartitionState(next(self._incarnations))

    def revoke(self, topic: str, partition: int) -> None:
        self._partitions.pop((topic, partition), None)

    def assigned(self) -> list[Partition]:
        return list(self._partitions)

    def fetched(self, topic: str, partition: int, offset: int) -> OffsetRef | None:
        """Record a fetched offset as pending; None if the partition is not assigned."""
        state = self._partitions.get((topic, partition))
        if state is None:
            return None
        state.pending.add(offset)
        if state.next_offset is None or offset >= state.next_offset:
            state.next_offset = offset + 1
        return OffsetRef(topic, partition, offset, state.incarnation)

    def done(self, ref: OffsetRef) -> None:
        """The record is done (started, or settled); a ref from an earlier assignment is
        ignored."""
        if self.current(ref):
            self._partitions[(ref.topic, ref.partition)].pending.discard(ref.offset)

    def current(self, ref: OffsetRef) -> bool:
        """Whether ``ref`` belongs to the partition's present assignment."""
        state = self._partitions.get((ref.topic, ref.partition))
        return state is not None and state.incarnation == ref.incarnation

    def watermark(self, topic: str, partition: int) -> int | None:
        """The offset to commit for a partition: its lowest pending one, or the next."""
        state = self._partitions.get((topic, partition))
        if state is None or state.next_offset is None:
            return None
        return min(state.pending) if state.pending else state.next_offset

    def to_commit(self) -> dict[Partition, int]:
        """Watermarks that moved past what was last committed."""
        moved = {}
        for key, state in self._partitions.items():
            mark = self.watermark(*key)
            if mark is not None and (state.committed is None or mark > state.committed):
                moved[key] = mark
        return moved

    def committed(self, offsets: dict[Partition, int]) -> None:
        """The transaction carrying ``offsets`` committed."""
        for key, offset in offsets.items():
            state = self._partitions.get(key)
            if state is not None:
                state.committed = offset
