"""Records fetched before their time: held until their due instant comes near.

The timers may fire a job ahead of its due instant (``JOBSTREAM_FIRE_LEAD``), and a
worker's clock may run behind the timers'. Either way a record arrives before it is due;
its lane keeps it here, not in its tier buffer, so no slot is taken and no record behind
it waits, and releases it ``claim_ahead_ms`` before it is due, with the others due within
as much again: claimed then in one transaction, its run holds no slot until its launch
comes near (pipeline/worker/loop.py), and its handler starts on the instant
(pipeline/worker/executor.py waits for it), not a claim's round trip after it.

Pure: the clock is an argument.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from itertools import count
from typing import Generic, TypeVar

from pipeline.worker.offsets import Partition

T = TypeVar("T")


class EarlyRecords(Generic[T]):
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Partition, T]] = []
        """(release instant, arrival order, partition, record)."""
        self._order = count()

    def add(self, release_ms: int, partition: Partition, record: T) -> None:
        heapq.heappush(self._heap, (release_ms, next(self._order), partition, record))

    def due(self, now_ms: int) -> list[tuple[Partition, T]]:
        """The records whose release instant has come, earliest first; they leave."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            _, _, partition, record = heapq.heappop(self._heap)
            out.append((partition, record))
        return out

    def next_ms(self) -> int | None:
        """The next release instant, if any record is held."""
        return self._heap[0][0] if self._heap else None

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop the records of revoked partitions."""
        gone = set(partitions)
        kept = [item for item in self._heap if item[2] not in gone]
        if len(kept) != len(self._heap):
            heapq.heapify(kept)
            self._heap = kept

    def __len__(self) -> int:
        return len(self._heap)
