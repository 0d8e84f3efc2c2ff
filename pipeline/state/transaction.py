"""Changes to one partition's store, held in memory until the Kafka transaction commits.

Reads see the pending changes over the store. Nothing reaches RocksDB before the
broker has committed the transaction that carries the same changes to the changelog:
a crash in between leaves the files behind the changelog (recovery catches up), never
ahead of it (which would lose an aborted firing).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from pipeline.state.store import PartitionStore

_DELETED = None


class PartitionTransaction:
    def __init__(self, store: PartitionStore) -> None:
        self.store = store
        self.changes: dict[bytes, bytes | None] = {}

    def get(self, key: bytes) -> bytes | None:
        if key in self.changes:
            return self.changes[key]
        return self.store.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self.changes[key] = value

    def delete(self, key: bytes) -> None:
        self.changes[key] = _DELETED

    def scan(self, lower: bytes, upper: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Entries with lower <= key < upper, pending changes applied, in key order."""
        pending = sorted(
            (key, value) for key, value in self.changes.items() if lower <= key < upper
        )
        stored = (
            (key, value) for key, value in self.store.scan(lower, upper)
            if key not in self.changes
        )  # fmt: skip
        live = ((key, value) for key, value in pending if value is not _DELETED)
        yield from heapq.merge(stored, live)

    def commit(self, changelog_offset: int | None) -> None:
        self.store.write(self.changes, changelog_offset)
        self.changes = {}

    def rollback(self) -> None:
        self.changes = {}
