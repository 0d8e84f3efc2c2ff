"""Drive a processor with no broker: input records and a clock the test controls.

Like Kafka Streams' TopologyTestDriver: :meth:`ProcessorDriver.pipe` hands one record to
the processor and commits, :meth:`ProcessorDriver.advance` moves the clock and punctuates.
The processor runs in the runner's own :class:`~jobstream._pipeline.runtime.task.Task` over real
RocksDB stores, and every output is encoded as the runner would encode it, so what a
test sees is what the broker would have received: the outputs (:attr:`outputs`), the
changelog (:attr:`changelog`) and the stores (:meth:`store`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Generic, TypeVar

from jobstream._pipeline.runtime.processor import Output, Processor, Record
from jobstream._pipeline.runtime.task import Task
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.state.batch import ChangelogRecord
from jobstream._pipeline.state.store import PartitionStore

S = TypeVar("S")


class DriverRecord:
    """An input record with the accessors of confluent-kafka's ``Message``."""

    __slots__ = ("_key", "_offset", "_partition", "_topic", "_value")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None,
                 value: bytes | None) -> None:  # fmt: skip
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value = key, value

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value


class ProcessorDriver(Generic[S]):
    def __init__(self, processor: Processor[S], state_dir: Path, *,
                 partitions: Iterable[int] = (0,), now_ms: int = 0,
                 punctuate_limit: int = 10_000, keep: bool = True) -> None:  # fmt: skip
        self.processor = processor
        self.keep = keep
        """Keep every output and changelog record (:attr:`outputs`, :attr:`changelog`) for
        a test to read; a replay of a whole topic keeps none."""
        self.state_dir = state_dir
        self.now_ms = now_ms
        """The clock: :meth:`advance` moves it on, and a test may set it to any time."""
        self.serialize, _ = make_serde()
        owned = sorted(set(partitions))
        self.stores: dict[int, PartitionStore] | None = None
        if processor.changelog is not None:
            self.stores = {p: PartitionStore(state_dir / str(p)) for p in owned}
        self.task: Task[S] = Task(processor, self.stores, punctuate_limit)
        self.task.assign(owned)
        for p in owned:
            self.task.reached_end(p)
        self.outputs: list[Output] = []
        """Every output committed so far, in the order the runner would produce them."""
        self.changelog: dict[int, list[ChangelogRecord]] = {p: [] for p in owned}
        self._offsets: dict[tuple[str, int], int] = {}
        self._logged: dict[int, int] = {}
        """Changelog records written per partition: the offset its store records."""

    def pipe(self, topic: str, value: Event | bytes | None, *, key: bytes | None = None,
             partition: int = 0, punctuate: bool = False) -> list[Output]:  # fmt: skip
        """Process one record (an Event is encoded first), then punctuate if asked (in the
        same transaction, as the runner does within one), and commit; return the outputs."""
        raw = self.serialize(value) if isinstance(value, Event) else value
        offset = self._offsets.get((topic, partition), 0)
        self._offsets[(topic, partition)] = offset + 1
        self.task.process([DriverRecord(topic, partition, offset, key, raw)], self.now_ms)
        self.task.reached_end(partition)  # nothing else is waiting on it
        if punctuate:
            self.task.punctuate(self.now_ms)
        return self._commit()

    def feed(self, records: Iterable[Record]) -> list[Output]:
        """Process records read from a topic (their own offsets) in one transaction, at
        :attr:`now_ms`, and commit; return their outputs."""
        self.task.process(records, self.now_ms)
        return self._commit()

    def advance(self, ms: int = 0) -> list[Output]:
        """Move the clock by ``ms``, punctuate, and commit; return the outputs."""
        self.now_ms += ms
        self.task.punctuate(self.now_ms)
        return self._commit()

    def store(self, partition: int = 0) -> PartitionStore:
        assert self.stores is not None, f"{self.processor.name} keeps no stores"
        return self.stores[partition]

    def reopen(self) -> None:
        """Close and reopen the stores from their files, as a restarted process would."""
        if self.stores is not None:
            for p, store in self.stores.items():
                store.close()
                self.stores[p] = PartitionStore(self.state_dir / str(p))

    def close(self) -> None:
        for store in (self.stores or {}).values():
            store.close()

    def _commit(self) -> list[Output]:
        tx = self.task.take()
        if tx is None:
            return []
        produced = list(tx.emits())
        for output in produced:  # encoded as the runner would: a bad output fails here
            value = output.value
            self.serialize(value) if isinstance(value, Event) else bytes(value)
        for p, work in tx.partitions.items():
            if self.stores is not None:
                log = self.changelog[p]
                flushed = work.state.flush()  # type: ignore[attr-defined]
                self._logged[p] = self._logged.get(p, 0) + len(flushed)
                if self.keep:
                    log.extend(flushed)
                logged = self._logged[p]
                work.state.tx.commit(logged - 1 if logged else None)  # type: ignore[attr-defined]
        self.task.committed(tx)
        if self.keep:
            self.outputs.extend(produced)
        return produced
