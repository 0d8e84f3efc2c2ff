"""Records fetched before their time: held until their due instant comes near.

The timers may fire a job ahead of its due instant (``JOBSTREAM_FIRE_LEAD``), and a
worker's clock may run behind the timers'. Either way a record arrives before it is due;
its lane keeps it here, not in its tier buffer, so no slot is taken and no record behind
it waits, and releases it ``claim_ahead_ms`` before it is due, with the others due within
as much again: claimed then in one transaction, its run holds no slot until its launch
comes near (pipeline/worker/loop.py), and its handler starts on the instant
(pipeline/worker/executor.py waits for it), not a claim's round trip after it.

Records due at one instant leave with the partitions in turn, each partition's in its
order, as the tier buffer serves them (pipeline/worker/buffer.py): librdkafka hands over
one partition's fetched records before the next's, and a worker claims ahead only so
many (``claimed_ahead_most``), so in arrival order a flood's partitions would go first,
and the jobs fair firing put at the front of the others would wait behind it.

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
        self._heap: list[tuple[int, int, int, Partition, T]] = []
        """(release instant, rank in its partition at that instant, arrival order,
        partition, record)."""
        self._order = count()
        self._ranks: dict[tuple[Partition, int], int] = {}
        """Records held so far of each partition for each release instant."""

    def add(self, release_ms: int, partition: Partition, record: T) -> None:
        rank = self._ranks.get((partition, release_ms), 0)
        self._ranks[(partition, release_ms)] = rank + 1
        heapq.heappush(self._heap, (release_ms, rank, next(self._order), partition, record))

    def due(self, now_ms: int) -> list[tuple[Partition, T]]:
        """The records whose release instant has come, earliest first, the partitions in
        turn within an instant; they leave."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            release_ms, _, _, partition, record = heapq.heappop(self._heap)
            self._ranks.pop((partition, release_ms), None)
            out.append((partition, record))
        return out

    def next_ms(self) -> int | None:
        """The next release instant, if any record is held."""
        return self._heap[0][0] if self._heap else None

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop the records of revoked partitions."""
        gone = set(partitions)
        kept = [item for item in self._heap if item[3] not in gone]
        if len(kept) != len(self._heap):
            heapq.heapify(kept)
            self._heap = kept
            self._ranks = {key: n for key, n in self._ranks.items() if key[0] not in gone}

    def __len__(self) -> int:
        return len(self._heap)
