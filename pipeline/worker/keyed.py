"""Concurrency keys at a worker: runs counted per key, records parked behind a key at its limit.

A job with a concurrency key (docs/keys.md) is fired to the partition index its key
chooses (pipeline/concurrency.py, :func:`keyed_partition`), so every run of one key of a
job type reaches the one worker that owns that index at the time. That worker counts the
runs of each key (:class:`KeyedRuns`, shared by its lanes): a run holds its key from the
moment it is added to the runs in flight until its handler returns, as a slot of the
type-wide limit does (pipeline/worker/slots.py).

A record picked to start whose key is at its limit is **parked** (:class:`ParkedRecords`,
one per lane): it leaves the tier buffer, so the records of other keys behind it on the
same partition go on starting, and waits in its key's first-in-first-out queue until a
run of the key ends. Its offset stays pending (pipeline/worker/offsets.py): the
partition's watermark does not pass it, so a rebalance or a crash hands it to the next
owner, and nothing parked is lost. A key with parked records takes its new records behind
them, so a key's runs start in the order they were picked. The lane pauses a partition
whose parked records pass their share of :data:`PARKED_MOST` (or of
:data:`PARKED_BYTES`), as it pauses a partition that holds more than its share of a tier
buffer (pipeline/worker/pauses.py).

Pure bookkeeping, no Kafka: tests/pipeline/worker/test_keyed.py drives it directly.
docs/adr/0008-concurrency-keys.md has the design and its guarantee.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from jobstream._pipeline.model.keys import scoped
from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.worker.offsets import Partition
from jobstream._pipeline.worker.pauses import BUFFER_BYTES

R = TypeVar("R")

PARKED_MOST = 10_000
"""Records a lane keeps parked at most (split over its partitions) before pausing them."""
PARKED_BYTES = BUFFER_BYTES
"""The same bound in bytes: parked records hold their params in memory."""


@dataclass(frozen=True, slots=True)
class ConcurrencyKey:
    """A run's concurrency key, as the worker counts it."""

    scoped: str
    """The key with its owner (:func:`jobstream._pipeline.model.keys.scoped`): what is counted."""
    name: str
    """The key as the job gave it: what ``held_by`` names."""
    limit: int
    """Runs of the key at once this job allows (a record's own limit decides its start)."""

    @property
    def held_by(self) -> str:
        return f"concurrency:{self.name}"


def concurrency_key(execution: ExecutionRequested) -> ConcurrencyKey | None:
    """The execution's concurrency key, if its job has one."""
    keys = execution.spec.job_keys
    if keys is None or keys.concurrency_key is None:
        return None
    return ConcurrencyKey(scoped(execution.spec.owner, keys.concurrency_key),
                          keys.concurrency_key, keys.concurrency_limit)  # fmt: skip


class KeyedRuns:
    """The runs of each concurrency key in one worker, every lane's: the job ids holding it."""

    def __init__(self) -> None:
        self._running: dict[str, list[str]] = {}
        self._freed: list[Callable[[str], None]] = []

    def on_freed(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(scoped key)`` whenever a run of a key ends."""
        self._freed.append(listener)

    def room(self, key: ConcurrencyKey) -> bool:
        """Whether one more run of ``key`` may start here now."""
        return len(self._running.get(key.scoped, ())) < key.limit

    def take(self, key: ConcurrencyKey, job_id: str) -> None:
        self._running.setdefault(key.scoped, []).append(job_id)

    def give(self, key: ConcurrencyKey, job_id: str) -> None:
        running = self._running.get(key.scoped)
        if running is None or job_id not in running:
            return
        running.remove(job_id)
        if not running:
            del self._running[key.scoped]
        for listener in self._freed:
            listener(key.scoped)

    def running(self, key: ConcurrencyKey) -> list[str]:
        """The job ids of the key's runs, oldest first: what a parked record waits behind."""
        return list(self._running.get(key.scoped, ()))

    def __len__(self) -> int:
        """Runs holding a key."""
        return sum(len(jobs) for jobs in self._running.values())


@dataclass(slots=True)
class Parked(Generic[R]):
    partition: Partition
    key: ConcurrencyKey
    record: R
    size: int


@dataclass(frozen=True, slots=True)
class Held(Generic[R]):
    """A record just parked, to be announced once (JobLifecycle HELD)."""

    record: R
    key: ConcurrencyKey
    waiting_for: list[str]


class ParkedRecords(Generic[R]):
    """One lane's records parked behind their key, a queue per key, in the order parked."""

    def __init__(self, runs: KeyedRuns) -> None:
        self.runs = runs
        self._queues: dict[str, deque[Parked[R]]] = {}
        self._ready: dict[str, None] = {}
        """Keys with parked records that may have room now (a run of theirs ended), in the
        order they were freed."""
        self._counts: dict[Partition, int] = {}
        self._bytes: dict[Partition, int] = {}
        self.held: list[Held[R]] = []
        """Records parked since the last :meth:`take_held`, each to be announced once."""
        runs.on_freed(self._freed)

    def admit(self, key: ConcurrencyKey, partition: Partition, record: R, size: int) -> bool:
        """Whether ``record`` may start now; if not, it is parked at the back of its key's
        queue (announced in :attr:`held`)."""
        if key.scoped not in self._queues and self.runs.room(key):
            return True
        self._park(Parked(partition, key, record, size), first=False)
        self.held.append(Held(record, key, self.runs.running(key)))
        return False

    def park_first(self, key: ConcurrencyKey, partition: Partition, record: R, size: int) -> None:
        """Park a record that was picked before every one parked behind its key (and let
        go, announced or not) at the front of its key's queue."""
        self._park(Parked(partition, key, record, size), first=True)

    def _park(self, parked: Parked[R], *, first: bool) -> None:
        queue = self._queues.setdefault(parked.key.scoped, deque())
        (queue.appendleft if first else queue.append)(parked)
        self._counts[parked.partition] = self._counts.get(parked.partition, 0) + 1
        self._bytes[parked.partition] = self._bytes.get(parked.partition, 0) + parked.size
        if self.runs.room(parked.key):  # parked behind others of its key, not for want of room
            self._ready[parked.key.scoped] = None

    def _freed(self, scoped_key: str) -> None:
        if scoped_key in self._queues:
            self._ready[scoped_key] = None

    def pop_ready(self, partition_ready: Callable[[Partition], bool] | None = None) -> R | None:
        """The first parked record whose key has room now (and whose partition is
        ``partition_ready``: a slot of a type-wide limit); None if there is none."""
        for scoped_key in list(self._ready):
            queue = self._queues.get(scoped_key)
            if not queue or not self.runs.room(queue[0].key):
                del self._ready[scoped_key]
                continue
            head = queue[0]
            if partition_ready is not None and not partition_ready(head.partition):
                continue
            queue.popleft()
            self._count_out(head)
            if not queue:
                del self._queues[scoped_key]
                del self._ready[scoped_key]
            return head.record
        return None

    def has_ready(self, partition_ready: Callable[[Partition], bool] | None = None) -> bool:
        """Whether :meth:`pop_ready` would give a record (it drops stale ready keys)."""
        for scoped_key in list(self._ready):
            queue = self._queues.get(scoped_key)
            if not queue or not self.runs.room(queue[0].key):
                del self._ready[scoped_key]
            elif partition_ready is None or partition_ready(queue[0].partition):
                return True
        return False

    def _count_out(self, parked: Parked[R]) -> None:
        partition = parked.partition
        left = self._counts[partition] - 1
        if left:
            self._counts[partition] = left
            self._bytes[partition] -= parked.size
        else:
            del self._counts[partition]
            del self._bytes[partition]

    def take(self, wanted: Callable[[R], bool]) -> list[R]:
        """Take out the parked records ``wanted`` (a cancel's), in their keys' order; they
        are announced no more."""
        taken: list[R] = []
        for scoped_key in list(self._queues):
            queue = self._queues[scoped_key]
            gone = [parked for parked in queue if wanted(parked.record)]
            if not gone:
                continue
            for parked in gone:
                queue.remove(parked)
                self._count_out(parked)
                taken.append(parked.record)
            if not queue:
                del self._queues[scoped_key]
                self._ready.pop(scoped_key, None)
        if taken:
            self.held = [held for held in self.held if not wanted(held.record)]
        return taken

    def take_held(self) -> list[Held[R]]:
        held, self.held = self.held, []
        return held

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop the parked records of revoked partitions: their next owner fetches them
        again (their offsets were never committed)."""
        gone = set(partitions) & set(self._counts)
        if not gone:
            return
        for scoped_key in list(self._queues):
            kept = deque(p for p in self._queues[scoped_key] if p.partition not in gone)
            if kept:
                self._queues[scoped_key] = kept
            else:
                del self._queues[scoped_key]
                self._ready.pop(scoped_key, None)
        for partition in gone:
            del self._counts[partition]
            del self._bytes[partition]

    def crowded(self, partitions: int, paused: frozenset[Partition]) -> frozenset[Partition]:
        """The partitions to keep paused for their parked records: those holding their
        share (of ``partitions`` assigned) of :data:`PARKED_MOST` records or of
        :data:`PARKED_BYTES`, and those paused so until they are down to half of it."""
        most = max(1, PARKED_MOST // max(1, partitions))
        most_bytes = max(1, PARKED_BYTES // max(1, partitions))
        fill = {partition: max(count / most, self._bytes[partition] / most_bytes)
                for partition, count in self._counts.items()}  # fmt: skip
        return frozenset(partition for partition, level in fill.items()
                         if level >= 1.0 or (partition in paused and level > 0.5))  # fmt: skip

    def parked(self, partition: Partition) -> int:
        return self._counts.get(partition, 0)

    def __len__(self) -> int:
        return sum(self._counts.values())

    def __bool__(self) -> bool:
        return bool(self._counts)
