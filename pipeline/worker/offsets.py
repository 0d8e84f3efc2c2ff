"""Which input offsets a worker may commit, records being done out of order.

Kafka commits one offset per partition: "everything below this is done". A record is
done here once it is started (claimed: its offset commits with its STARTED, before its
handler runs) or settled without a run (skipped, refused, unreadable). Records wait in
buffers by tier and turn, and those fired ahead are claimed by instant and owner, so they
are done in any order, and the offset committed is the lowest offset fetched but not yet
done (or one past the last fetched when nothing is pending).

The offsets done above it go with it, in the commit's metadata (:func:`encode_done`): the
partition's next owner reads them when it is assigned the partition and passes over those
records. So a record fetched but not done when the worker dies is fetched again by the
next owner, and a started one is not run again, whatever order the records were done in
(pipeline/worker/engine.py). Should the done offsets outgrow what a commit's metadata may
hold (:data:`METADATA_MOST_CHARS`), the farthest are left out: their records would start
again, and the status processor flags the second STARTED as a duplicate.

Assignments come and go with rebalances. Each assignment of a partition gets a new
incarnation number, carried by every :class:`OffsetRef`, so a job that finishes after its
partition was revoked (and perhaps assigned back) cannot move the new owner's watermark.

Pure bookkeeping, no Kafka calls: unit-tested directly.
"""

from __future__ import annotations

import base64
import binascii
import logging
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import count
from typing import NamedTuple

log = logging.getLogger(__name__)

Partition = tuple[str, int]

DONE_PREFIX = "done1:"
"""What a commit's metadata written by :func:`encode_done` starts with (format 1)."""
METADATA_MOST_CHARS = 3000
"""The longest metadata a commit carries: brokers refuse more than
``offset.metadata.max.bytes`` (4,096 by default)."""


class OffsetRef(NamedTuple):
    """One fetched record: where it came from, and under which assignment.

    A named tuple rather than a frozen dataclass: one is made per record fetched, at a
    third of the cost.
    """

    topic: str
    partition: int
    offset: int
    incarnation: int


class Mark(NamedTuple):
    """What a partition's commit carries: its watermark, and the offsets done above it."""

    offset: int
    metadata: str


@dataclass(slots=True)
class _PartitionState:
    incarnation: int
    pending: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)
    """Offsets done since the last commit, and those done above the last watermark."""
    started_before: set[int] = field(default_factory=set)
    """Offsets done by the partition's previous owner that this one has not fetched yet."""
    next_offset: int | None = None
    """One past the highest offset fetched; None until the first record arrives."""
    committed: Mark | None = None


class OffsetTracker:
    """Pending offsets per assigned partition, and the watermarks safe to commit."""

    def __init__(self) -> None:
        self._partitions: dict[Partition, _PartitionState] = {}
        self._incarnations = count(1)
        self.started_before = 0
        """Records passed over: the partition's previous owner had done them."""

    def assign(self, topic: str, partition: int, committed: int | None = None,
               metadata: str | None = None) -> None:  # fmt: skip
        """A partition assigned, with its last commit (offset and metadata) if known."""
        state = _PartitionState(next(self._incarnations))
        if committed is not None and committed >= 0 and metadata:
            state.started_before = decode_done(committed, metadata)
        self._partitions[(topic, partition)] = state

    def revoke(self, topic: str, partition: int) -> None:
        self._partitions.pop((topic, partition), None)

    def assigned(self) -> list[Partition]:
        return list(self._partitions)

    def fetched(self, topic: str, partition: int, offset: int) -> OffsetRef | None:
        """Record a fetched offset as pending; None if the partition is not assigned, or
        if its previous owner had done the record (it stays done)."""
        state = self._partitions.get((topic, partition))
        if state is None:
            return None
        if state.next_offset is None or offset >= state.next_offset:
            state.next_offset = offset + 1
        if offset in state.started_before:
            state.started_before.discard(offset)
            state.done.add(offset)
            self.started_before += 1
            return None
        state.pending.add(offset)
        return OffsetRef(topic, partition, offset, state.incarnation)

    def done(self, ref: OffsetRef) -> None:
        """The record is done (started, or settled); a ref from an earlier assignment is
        ignored."""
        if self.current(ref):
            state = self._partitions[(ref.topic, ref.partition)]
            state.pending.discard(ref.offset)
            state.done.add(ref.offset)

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

    def to_commit(self) -> dict[Partition, Mark]:
        """The marks that changed since the last commit: the watermark moved, or more
        records above it are done."""
        changed = {}
        for key, state in self._partitions.items():
            offset = self.watermark(*key)
            if offset is None:
                continue
            if state.done:
                state.done = {done for done in state.done if done >= offset}
            if state.started_before:
                state.started_before = {done for done in state.started_before if done >= offset}
            above = state.done | state.started_before
            mark = Mark(offset, encode_done(offset, above) if above else "")
            if mark != state.committed:
                changed[key] = mark
        return changed

    def committed(self, marks: dict[Partition, Mark]) -> None:
        """The transaction carrying ``marks`` committed."""
        for key, mark in marks.items():
            state = self._partitions.get(key)
            if state is not None:
                state.committed = mark


def encode_done(offset: int, done: Iterable[int]) -> str:
    """The offsets of ``done`` from ``offset`` on as a commit's metadata: a bitmap (bit
    ``i`` is offset ``offset + i``), compressed, in base 64. The nearest offsets are kept
    when all would be longer than :data:`METADATA_MOST_CHARS`."""
    relative = sorted(d - offset for d in done if d >= offset)
    while relative:
        bitmap = bytearray(relative[-1] // 8 + 1)
        for i in relative:
            bitmap[i >> 3] |= 1 << (i & 7)
        text = DONE_PREFIX + base64.b64encode(zlib.compress(bytes(bitmap))).decode()
        if len(text) <= METADATA_MOST_CHARS:
            return text
        kept = relative[: len(relative) // 2]
        log.warning("%d offsets done from %d on do not fit a commit's metadata: the "
                    "farthest %d are left out", len(relative), offset, len(relative) - len(kept))
        relative = kept
    return ""


def decode_done(offset: int, metadata: str) -> set[int]:
    """The offsets done from ``offset`` on that :func:`encode_done` wrote; none from
    metadata of another form."""
    if not metadata.startswith(DONE_PREFIX):
        return set()
    try:
        bitmap = zlib.decompress(base64.b64decode(metadata[len(DONE_PREFIX):], validate=True))
    except (binascii.Error, zlib.error) as exc:
        log.warning("unreadable done offsets in a commit's metadata, ignored: %s", exc)
        return set()
    return {offset + byte * 8 + bit for byte, bits in enumerate(bitmap)
            for bit in range(8) if bits >> bit & 1}  # fmt: skip
