"""A processor's work on the partitions it owns, between one commit and the next.

The task holds what the runtime knows of the owned partitions (their stores, which were
read to their end) and the open transaction; it feeds records and the clock to the
processor and keeps what comes out. It does no I/O: the runner (over Kafka) and the
driver (in tests) consume, produce and commit around it, so both carry the very same
processing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Generic, TypeVar

from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.processor import Processor, Record
from jobstream._pipeline.runtime.transaction import OpenTransaction
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore

S = TypeVar("S")


class Task(Generic[S]):
    def __init__(self, processor: Processor[S], stores: Mapping[int, PartitionStore] | None,
                 punctuate_limit: int) -> None:  # fmt: skip
        """``stores`` is the live mapping of the owned partitions' stores (None: stateless)."""
        self.processor = processor
        self.stores = stores
        self.punctuate_limit = punctuate_limit
        self.owned: set[int] = set()
        self.caught_up: set[int] = set()
        """Partitions read to their end since their last record (librdkafka's EOF)."""
        self.stats = Counters("consumed", "transactions", "aborted", "dropped")
        """``consumed``: input records committed; ``dropped``: records folded into an open
        transaction, then dropped with their revoked partition (its next owner reads them
        again)."""
        self._open: OpenTransaction[S] | None = None

    # -- partitions ----------------------------------------------------------------------

    def assign(self, partitions: Iterable[int]) -> None:
        """Take partitions in (their stores already restored); an open transaction too."""
        added = set(partitions) - self.owned
        self.owned |= added
        if self._open is not None:
            for p in added:
                self._open.open(p, self._state(p))

    def revoke(self, partitions: Iterable[int]) -> None:
        """Give partitions up: their share of the open transaction is dropped, not committed."""
        revoked = set(partitions) & self.owned
        self.owned -= revoked
        self.caught_up -= revoked
        if self._open is not None:
            self.stats.dropped += self._open.drop(revoked)
        for p in revoked:
            self.processor.revoked(p)

    def reached_end(self, partition: int) -> None:
        self.caught_up.add(partition)

    # -- processing ----------------------------------------------------------------------

    def begin(self) -> None:
        """Open the transaction (the processor's state of every owned partition) before
        the records come: the processor may then say which inputs it holds back."""
        self._begin()

    def process(self, records: Iterable[Record], now_ms: int) -> None:
        """Fold records of owned partitions into the open transaction; others are skipped
        (a revoke raced the fetch: they belong to the new owner)."""
        tx = self._begin()
        process = self.processor.process
        for record in records:
            p = record.partition() or 0
            work = tx.partitions.get(p)
            if work is None:
                continue
            self.caught_up.discard(p)
            tx.fold(p, process(work.state, record, now_ms), consumed=1)

    def punctuate(self, now_ms: int) -> None:
        """Act on the wall clock, for every partition (or those read to their end)."""
        tx = self._begin()
        partitions: Set[int] = tx.partitions.keys()
        if not partitions:
            return
        limit = max(1, self.punctuate_limit // len(tx.partitions))
        for p in sorted(partitions):
            state = tx.partitions[p].state
            if not self.processor.punctuate_when_caught_up or p in self.caught_up:
                tx.fold(p, self.processor.punctuate(state, now_ms, limit))
            else:
                tx.fold(p, self.processor.punctuate_behind(state, now_ms, limit))

    @property
    def uncommitted(self) -> int:
        """Input records folded into the open transaction."""
        return 0 if self._open is None else self._open.consumed

    @property
    def open_transaction(self) -> OpenTransaction[S] | None:
        """The transaction records and the clock fold into until the next commit; None
        before the first record or tick since the last one."""
        return self._open

    # -- committing ----------------------------------------------------------------------

    def take(self) -> OpenTransaction[S] | None:
        """The open transaction, if it holds anything to commit; the task starts afresh."""
        tx, self._open = self._open, None
        return tx if tx is not None and tx.pending else None

    def committed(self, tx: OpenTransaction[S]) -> None:
        """``tx`` has committed (Kafka, then the stores): tell the processor, count it."""
        for work in tx.partitions.values():
            self.processor.committed(work.state, work.produced())
        self.stats.transactions += 1
        self.stats.consumed += tx.consumed

    def aborted(self, tx: OpenTransaction[S]) -> None:
        tx.rollback()
        self.stats.aborted += 1

    def release(self) -> None:
        """Drop an open transaction that holds nothing to commit."""
        if self._open is not None and not self._open.pending:
            self._open = None

    def _begin(self) -> OpenTransaction[S]:
        if self._open is None:
            self._open = OpenTransaction()
            for p in sorted(self.owned):
                self._open.open(p, self._state(p))
        return self._open

    def _state(self, partition: int) -> S:
        store = None if self.stores is None else self.stores[partition]
        return self.processor.open(
            None if store is None else PartitionBatch(store), partition
        )
