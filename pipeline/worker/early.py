"""Records fetched before their time, kept in the order they are to be claimed.

The timers may fire a job ahead of its due instant (``JOBSTREAM_FIRE_LEAD``), and a
worker's clock may run behind the timers'. Either way a record arrives before it is due.
Its lane keeps it twice over in an :class:`EarlyRecords`, not in its tier buffer, so no
slot is taken and no record behind it waits:

- ``early``, by release instant, until ``claim_ahead_ms`` before it is due, when it
  leaves with the others due within as much again, to be claimed in one transaction;
- ``ahead``, by due instant, until the worker claims it (up to ``claimed_ahead_most``
  runs at a time); the claimed run holds no slot until its launch comes near
  (pipeline/worker/engine.py), and its handler starts on the instant
  (pipeline/worker/executor.py waits for it), not a claim's round trip after it.

Records of one instant leave in weighted fair order between their owners
(``JOBSTREAM_OWNER_WEIGHTS``, as the timers fire them: docs/fairness.md), each owner's in
arrival order. Claimed runs start in the order claimed, and arrival order is the timers'
order per timer partition only: each timer partition's batch reaches an execution
partition whole, one after another, and a batch fired late arrives behind the others, so
a small owner's jobs at the front of a later batch would wait behind a whole flood.

Pure: the clock is an argument.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import count
from typing import Generic, TypeVar

from jobstream._pipeline.worker.offsets import Partition

T = TypeVar("T")


class EarlyRecords(Generic[T]):
    def __init__(self, owner_of: Callable[[T], str],
                 weight: Callable[[str], float] = lambda owner: 1.0) -> None:  # fmt: skip
        self._owner_of, self._weight = owner_of, weight
        self._heap: list[tuple[int, float, int, Partition, str, T]] = []
        """(instant, its owner's turn at that instant, arrival order, partition, owner,
        record)."""
        self._order = count()
        self._turns: dict[tuple[str, int], tuple[float, int]] = {}
        """Each owner's next turn at each instant (one more record adds 1 / its weight),
        and how many of its records of that instant are held."""

    def add(self, instant_ms: int, partition: Partition, record: T) -> None:
        owner = self._owner_of(record)
        turn, held = self._turns.get((owner, instant_ms), (0.0, 0))
        self._turns[(owner, instant_ms)] = (turn + 1.0 / self._weight(owner), held + 1)
        heapq.heappush(self._heap, (instant_ms, turn, next(self._order), partition, owner,
                                    record))  # fmt: skip

    def pop(self) -> tuple[Partition, T]:
        """The first record: earliest instant, then fair order between owners."""
        instant, _, _, partition, owner, record = heapq.heappop(self._heap)
        turn, held = self._turns[(owner, instant)]
        if held == 1:
            del self._turns[(owner, instant)]
        else:
            self._turns[(owner, instant)] = (turn, held - 1)
        return partition, record

    def due(self, now_ms: int) -> list[tuple[Partition, T]]:
        """The records whose instant has come, in order; they leave."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            out.append(self.pop())
        return out

    def next_ms(self) -> int | None:
        """The first record's instant, if any record is held."""
        return self._heap[0][0] if self._heap else None

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop the records of revoked partitions."""
        gone = set(partitions)
        kept = [item for item in self._heap if item[3] not in gone]
        if len(kept) == len(self._heap):
            return
        heapq.heapify(kept)
        self._heap = kept
        held = Counter((item[4], item[0]) for item in kept)
        self._turns = {key: (self._turns[key][0], n) for key, n in held.items()}

    def __len__(self) -> int:
        return len(self._heap)
