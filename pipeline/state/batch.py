"""Changes to one partition's store, held in memory until the Kafka transaction commits.

Reads see the pending changes over the store. Nothing reaches RocksDB before the
broker has committed the transaction that carries the same changes to the changelog:
a crash in between leaves the files behind the changelog (recovery catches up), never
ahead of it (which would lose an aborted firing).

The pending keys are also kept sorted, so that a range scan costs the keys in its range
and not every change of the transaction: one transaction of the timers may release ten
thousand children of a workflow and scan again for each record after that.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Sequence

from jobstream._pipeline.state.store import PartitionStore

Logged = Sequence[tuple[str, bytes]]
ChangelogRecord = tuple[bytes, bytes | None] | tuple[bytes, bytes | None, Logged]
"""One change as the changelog carries it: the record's key, and the value or None for a
delete; and, when the processor has any for it, the record's headers (the status
processor's: what only it reads, pipeline/status/record.py)."""

_DELETED = None


class PartitionBatch:
    """One partition's writes, read through before they reach the store: a write batch
    applied only once the Kafka transaction that carries them has committed."""

    def __init__(self, store: PartitionStore) -> None:
        self.store = store
        self.changes: dict[bytes, bytes | None] = {}
        self._sorted: list[bytes] = []
        """The keys of ``changes``, in order."""

    def get(self, key: bytes) -> bytes | None:
        if key in self.changes:
            return self.changes[key]
        return self.store.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self.changes:
            bisect.insort(self._sorted, key)
        self.changes[key] = value

    def delete(self, key: bytes) -> None:
        if key not in self.changes:
            bisect.insort(self._sorted, key)
        self.changes[key] = _DELETED

    def scan(self, lower: bytes, upper: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Entries with lower <= key < upper, pending changes applied, in key order."""
        keys = self._sorted[bisect.bisect_left(self._sorted, lower):
                            bisect.bisect_left(self._sorted, upper)]  # fmt: skip
        pending = [(key, self.changes[key]) for key in keys]
        stored = (
            (key, value) for key, value in self.store.scan(lower, upper)
            if key not in self.changes
        )  # fmt: skip
        live = ((key, value) for key, value in pending if value is not _DELETED)
        yield from heapq.merge(stored, live)

    def commit(self, changelog_offset: int | None) -> None:
        self.store.write(self.changes, changelog_offset)
        self.rollback()

    def rollback(self) -> None:
        self.changes = {}
        self._sorted = []
