"""A partition store's layout: the partition count it is laid out for, and how far a grow
of its inputs has gone on it (docs/adr/0011-partitions-that-grow.md, for the timers;
docs/adr/0013-events-partitions-that-grow.md, for the status processor).

One record per store, logged to the changelog under :data:`LAYOUT_KEY` (so a restored
store knows it too). ``jobstream topics grow`` writes it first into the changelog
partitions it adds, so a new partition knows which old ones will hand it records and
waits for them before it reads its own input; an old partition starts a grow on its own
when the runner tells it the count went up. Both stateful processors (the timers, the
status processor) keep it alike.

Pure: no Kafka, no store.
"""

from __future__ import annotations

import msgspec

LAYOUT_KEY = b"h"
"""The layout's key in the store and the changelog: lower case like the timers' workflow
records (never a timer id's first letter), and none of theirs nor of the status
processor's key spaces (pipeline/status/state.py)."""
HANDOVER_HEADER = "jobstream.handover"
"""On a handover record (jobs.retry for the timers, jobs.status.handover for the status
processor), the store key of the record its value carries to its new home partition."""
SETTLED_HEADER = "jobstream.settled"
"""On a handover record: ``<partition>/<count>``, that partition has handed over every
record whose home moved when the count became ``<count>``."""


def sources(partition: int, old: int, new: int) -> frozenset[int]:
    """The partitions of the ``old`` count whose stores may hand records to ``partition``
    once there are ``new``: those whose keys' hashes can fall on it, itself left out.

    A key with hash h lived in h mod old and lives in h mod new. When ``new`` is a multiple
    of ``old`` that is the one partition ``partition`` mod ``old`` (none for an old
    partition: nothing moves into it); otherwise any old partition may send.
    """
    if not 0 <= partition < new or not 0 < old <= new:
        raise ValueError(f"partition {partition} of {new} (grown from {old})")
    found = {partition % old} if new % old == 0 else set(range(old))
    return frozenset(found - {partition})


def receivers(partition: int, old: int, new: int) -> list[int]:
    """The partitions of the ``new`` count that wait for ``partition``'s SETTLED marker."""
    return [q for q in range(new) if partition in sources(q, old, new)]


class Layout(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    """The partition count the store is laid out (or being laid out) for."""
    old: int
    """The count before the last grow (``count`` when there was none)."""
    settled: bool = True
    """Whether the store holds no record whose home is another partition under ``count``
    (an old partition sets it once it has handed all such records over)."""
    heard: list[int] = []
    """The partitions whose SETTLED marker for ``count`` has come."""

    def encode(self) -> bytes:
        return _ENCODER.encode(self)

    @staticmethod
    def decode(raw: bytes) -> Layout:
        return _DECODER.decode(raw)

    def waits_for(self, partition: int) -> frozenset[int]:
        """The old partitions still to hand records to ``partition``: until they have, it
        reads no intake (a command there could come before the entry it is about)."""
        return sources(partition, self.old, self.count) - set(self.heard)

    def grown(self, count: int) -> Layout:
        """The layout once the runner reports ``count`` partitions (more than before): the
        store must hand over what moved, and hear from the partitions that send to it."""
        return Layout(count=count, old=self.count, settled=False, heard=[])

    def hear(self, partition: int) -> Layout:
        return msgspec.structs.replace(self, heard=sorted({*self.heard, partition}))


def fresh(count: int) -> Layout:
    """The layout of a store that has none: laid out for the count it was first run with."""
    return Layout(count=count, old=count)


def unrecorded(partition: int, configured: int, live: int | None) -> Layout:
    """The layout of a store no grow has touched (no layout record): laid out for the
    configured count, unless its topic was made with more partitions than that and
    ``partition`` is one of them: then for the ``live`` count (at least its own)."""
    count = configured if partition < configured else max(live or 0, partition + 1)
    return fresh(count)


def added(old: int, count: int) -> Layout:
    """The layout ``jobstream topics grow`` writes to a partition it adds: nothing to hand
    over, records to wait for."""
    return Layout(count=count, old=old)


def settled_marker(partition: int, count: int) -> bytes:
    return f"{partition}/{count}".encode()


def read_settled_marker(raw: bytes) -> tuple[int, int]:
    partition, _, count = raw.decode().partition("/")
    return int(partition), int(count)


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Layout)
