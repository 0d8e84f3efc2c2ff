"""The open transaction: what a task did since its last commit, per partition.

A transaction may span several ``consume()`` calls (pipeline/runtime/schedule.py says when
it ends), so its work is kept per partition: a partition revoked while the transaction is
open drops its own share (its records were not committed; the next owner reads them
again) and the rest commits as usual. Nothing here touches Kafka or the stores' files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from more_itertools import interleave_longest

from jobstream._pipeline.runtime.processor import Output

S = TypeVar("S")


@dataclass
class PartitionWork(Generic[S]):
    """One partition's share of the open transaction."""

    state: S
    """The processor's state view over this partition's store batch (None: stateless)."""
    outputs: list[Output] = field(default_factory=list)
    """Records to produce, in the order they were decided."""
    consumed: int = 0
    urgent: bool = False
    """Whether an output is one another component waits on (:attr:`Output.urgent`)."""

    def add(self, outputs: Iterable[Output]) -> int:
        added = 0
        for output in outputs:
            self.urgent = self.urgent or output.urgent
            self.outputs.append(output)
            added += 1
        return added

    @property
    def changed(self) -> bool:
        state: Any = self.state
        return state is not None and state.changed

    def rollback(self) -> None:
        state: Any = self.state
        if state is not None:
            state.tx.rollback()

    def produced(self) -> list[Output]:
        return self.outputs


@dataclass
class OpenTransaction(Generic[S]):
    """The work of every owned partition since the last commit, and how big it has grown."""

    partitions: dict[int, PartitionWork[S]] = field(default_factory=dict)
    size: int = 0
    """Records consumed plus outputs: what ``commit_max_records`` bounds."""

    def open(self, partition: int, state: S) -> None:
        """Take a partition in (assigned, or owned when the transaction began)."""
        self.partitions.setdefault(partition, PartitionWork(state))

    def state(self, partition: int) -> S | None:
        work = self.partitions.get(partition)
        return None if work is None else work.state

    def fold(self, partition: int, outputs: Iterable[Output], consumed: int = 0) -> None:
        """Count ``consumed`` input records of ``partition`` and keep what they produced."""
        work = self.partitions[partition]
        work.consumed += consumed
        self.size += consumed + work.add(outputs)

    def drop(self, partitions: Iterable[int]) -> int:
        """Forget the work of revoked partitions (it is not committed, so it is redone);
        return how many input records it held."""
        dropped = 0
        for p in partitions:
            work = self.partitions.pop(p, None)
            if work is not None:
                work.rollback()
                dropped += work.consumed
        return dropped

    def rollback(self) -> None:
        self.drop(list(self.partitions))

    @property
    def consumed(self) -> int:
        return sum(work.consumed for work in self.partitions.values())

    @property
    def urgent(self) -> bool:
        """Whether the transaction holds an urgent output: it should commit at once."""
        return any(work.urgent for work in self.partitions.values())

    @property
    def pending(self) -> bool:
        """Whether there is anything to commit: input offsets, records or store changes."""
        return any(
            work.consumed or work.outputs or work.changed
            for work in self.partitions.values()
        )

    def emits(self) -> Iterator[Output]:
        """Every record to produce, each partition's in the order decided.

        The partitions' outputs are interleaved, each partition's kept in its own order (one
        key's outputs all come from one partition): a partition's firings then never wait
        in an execution topic behind a whole batch of another's.
        """
        yield from interleave_longest(*(work.outputs for work in self.partitions.values()))
