"""The status processor's open transaction: what was folded since the last commit.

A transaction spans several ``consume()`` calls (:func:`commit_due` says when it ends), so
its work is kept per partition: a partition revoked while the transaction is open drops
its own share (its events were not committed; the next owner reads them again) and the
rest commits as usual. Nothing here touches Kafka or the stores' files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pipeline.status.processor import Emit
from pipeline.status.state import JobRecord, StatusState


def commit_due(age_ms: float, size: int, *, interval_ms: int, max_events: int) -> bool:
    """Whether an open transaction should commit now.

    ``age_ms`` is the time since it took its first record, ``size`` the events it folded
    plus the records it produces; an empty transaction never commits.
    """
    return size > 0 and (age_ms >= interval_ms or size >= max_events)


@dataclass
class PartitionWork:
    """One partition's share of the open transaction."""

    state: StatusState
    statuses: dict[bytes, Emit] = field(default_factory=dict)
    """The last status of each job: jobs.status is compacted, so only that one is written."""
    events: list[Emit] = field(default_factory=list)
    """LOST and DUPLICATE records for jobs.events, in the order they were decided."""
    consumed: int = 0

    def add(self, emits: Iterable[Emit]) -> int:
        added = 0
        for emit in emits:
            if isinstance(emit.value, JobRecord):
                self.statuses[emit.key] = emit
            else:
                self.events.append(emit)
            added += 1
        return added


@dataclass
class OpenTransaction:
    """The work of every owned partition since the last commit, and how big it has grown."""

    started: float
    """Monotonic seconds when it took its first record (see :func:`commit_due`)."""
    partitions: dict[int, PartitionWork] = field(default_factory=dict)
    size: int = 0
    """Events folded plus records emitted: what ``max_events`` bounds."""

    def open(self, partition: int, state: StatusState) -> None:
        """Take a partition in (assigned, or owned when the transaction began)."""
        self.partitions.setdefault(partition, PartitionWork(state))

    def state(self, partition: int) -> StatusState | None:
        work = self.partitions.get(partition)
        return None if work is None else work.state

    def fold(self, partition: int, emits: Iterable[Emit], consumed: int = 0) -> None:
        """Count ``consumed`` input events of ``partition`` and keep what they emitted."""
        work = self.partitions[partition]
        work.consumed += consumed
        self.size += consumed + work.add(emits)

    def drop(self, partitions: Iterable[int]) -> int:
        """Forget the work of revoked partitions (it is not committed, so it is redone);
        return how many input events it held."""
        dropped = 0
        for p in partitions:
            work = self.partitions.pop(p, None)
            if work is not None:
                work.state.tx.rollback()
                dropped += work.consumed
        return dropped

    def rollback(self) -> None:
        self.drop(list(self.partitions))

    @property
    def consumed(self) -> int:
        return sum(work.consumed for work in self.partitions.values())

    @property
    def pending(self) -> bool:
        """Whether there is anything to commit: input offsets, records or store changes."""
        return any(
            work.consumed or work.statuses or work.events or work.state.changed
            for work in self.partitions.values()
        )

    def emits(self) -> Iterator[Emit]:
        """Every record to produce: the lifecycle events, then each job's last status."""
        for work in self.partitions.values():
            yield from work.events
        for work in self.partitions.values():
            yield from work.statuses.values()
