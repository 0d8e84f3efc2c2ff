"""A timer partition's layout: the partition count its store is laid out for, and how far
a grow of jobs.intake has gone on it (docs/adr/0011-partitions-that-grow.md).

One record per store, logged to the changelog under :data:`LAYOUT_KEY` (so a restored
store knows it too). ``jobstream topics grow`` writes it first into the changelog
partitions it adds, so a new partition knows which old ones will hand it records and
waits for them before it reads its own intake; an old partition starts a grow on its own
when the runner tells it the count went up.

Pure: no Kafka, no store.
"""

from __future__ import annotations

import msgspec

from jobstream._pipeline.timers.homes import sources

LAYOUT_KEY = b"h"
"""The layout's key in the store and the changelog: lower case like the workflow records'
(never a timer id's first letter), and none of theirs."""
HANDOVER_HEADER = "jobstream.handover"
"""On a jobs.retry record, the changelog key of the store record its value carries to its
new home partition."""
SETTLED_HEADER = "jobstream.settled"
"""On a jobs.retry record: ``<partition>/<count>``, that partition has handed over every
record whose home moved when the count became ``<count>``."""


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
