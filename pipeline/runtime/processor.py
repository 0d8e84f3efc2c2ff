"""What a processor is: the contract between a processor and the runtime that carries it.

In the spirit of Kafka Streams' processor API: a processor opens a state view over one
partition's store batch, turns each input record into outputs
(:meth:`Processor.process`), may act on the wall clock (:meth:`Processor.punctuate`), and
hears when its outputs have committed. It never touches Kafka, so a test drives it with
records and a clock of its own (pipeline/runtime/driver.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, SupportsBytes, TypeVar

from jobstream._pipeline.errors import TopicRefusedError
from jobstream._pipeline.kafka.clients import KafkaValue
from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import ChangelogRecord, PartitionBatch


class Record(Protocol):
    """An input record: confluent-kafka's ``Message`` outside tests, a plain object in them."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...


class StateView(Protocol):
    """One partition's state within one transaction, as a stateful processor keeps it."""

    tx: PartitionBatch

    @property
    def changed(self) -> bool:
        """Whether the transaction changed anything (it must commit even with no output)."""
        ...

    def flush(self) -> Iterable[ChangelogRecord]:
        """The changelog records of what changed, once, when the transaction commits."""
        ...


@dataclass(frozen=True, slots=True)
class Output:
    """One record to produce.

    ``value`` is an :class:`Event` (Avro-encoded by the runtime) or anything ``bytes()``
    encodes, at commit time. ``partition`` None lets the producer's partitioner decide.
    An ``urgent`` output is one another component waits on (a StepEnded: children of a
    workflow wait for it): its transaction commits at the end of the loop iteration that
    made it, not after the commit interval (pipeline/runtime/schedule.py).
    """

    topic: str
    key: bytes | None
    value: Event | SupportsBytes | bytes
    partition: int | None = None
    headers: Sequence[tuple[str, bytes]] | None = None
    urgent: bool = False


S = TypeVar("S")


class Processor(Generic[S]):
    """A consume-process-produce step; subclasses override what they need.

    ``S`` is the per-partition state: a :class:`StateView` for processors with a
    ``changelog``, anything (usually None) for stateless ones.
    """

    name: str = "processor"
    """The component: it names the consumer group (``jobstream.<name>``), the metrics label
    and the log lines."""
    inputs: tuple[str, ...] = ()
    input_patterns: tuple[str, ...] = ()
    """Regular expressions (``^...``) of further topics to read, each made at any time
    (the owners' intake topics): the group picks a new one up at its next metadata
    refresh. Partition p of each belongs with partition p of the inputs."""
    changelog: str | None = None
    """The compacted topic the stores are logged to; None for a stateless processor."""
    state_layout: ClassVar[int] = 1
    """The version of how the stores lay the state out, raised when :meth:`restore` starts
    deriving keys the files do not have (an index): files of an older layout are rebuilt
    from the changelog's start when their partition is assigned."""
    punctuate_when_caught_up: bool = False
    """Punctuate a partition only once it has been read to its end (the status processor's
    leases: heartbeats still in a backlog must not expire them)."""
    consumer_tuning: ClassVar[Mapping[str, KafkaValue]] = {}
    producer_tuning: ClassVar[Mapping[str, KafkaValue]] = {}
    """Beyond the transactional producer's settings (pipeline/kafka/clients.py)."""

    def start(self) -> None:
        """Before the runner joins its group: open what the processor reads beside its
        inputs (the timers' rate limits)."""

    def close(self) -> None:
        """The runner has stopped: close what :meth:`start` opened."""

    def topics_refused(self, refused: Mapping[str, str]) -> None:
        """The broker refused to create these output topics (name: why). The open
        transaction is dropped and its input read again: the processor must route
        elsewhere what it sent to them, or the error ends the process."""
        raise TopicRefusedError(dict(refused))

    def open(self, tx: PartitionBatch | None, partition: int) -> S:
        """The state view of ``partition`` over a new transaction (None: stateless)."""
        return None  # type: ignore[return-value]

    def restore(self, tx: PartitionBatch, key: bytes, value: bytes | None,
                headers: Headers = None) -> None:  # fmt: skip
        """Apply one changelog record (with its headers, None when it has none) while a
        store is restored."""
        raise NotImplementedError(f"{self.name} keeps no state to restore")

    def process(self, state: S, record: Record, now_ms: int) -> Iterable[Output]:
        raise NotImplementedError

    def punctuate(self, state: S, now_ms: int, limit: int) -> Iterable[Output]:
        """Act on the wall clock for one partition, at most ``limit`` records' worth."""
        return ()

    def punctuate_behind(self, state: S, now_ms: int, limit: int) -> Iterable[Output]:
        """For a processor that punctuates when caught up, the wall clock's work on a
        partition not read to its end yet: what reads no input to decide (the status
        processor's handover of a grow)."""
        return ()

    def committed(self, state: S, outputs: Sequence[Output]) -> None:
        """The transaction holding ``outputs`` (and the state's changes) has committed."""

    def inputs_counted(self, counts: Mapping[str, int]) -> None:
        """The inputs' partition counts, read when partitions are assigned (a grow of the
        inputs rebalances the group, so a new count comes with an assignment)."""

    def held_inputs(self) -> Set[tuple[str, int]]:
        """(topic, partition) of inputs the runner must not read for now, but for the
        records :meth:`admits`: from the first it does not, paused, and read again later."""
        return frozenset()

    def admits(self, record: Record) -> bool:
        """Whether a record of a held input may be processed all the same (one that can
        meet nothing the processor waits for)."""
        return False

    def revoked(self, partition: int) -> None:
        """``partition`` now belongs to another process: forget what is kept for it."""

    def counters(self) -> Mapping[str, object]:
        """The processor's own counters, for the stats line."""
        return {}
