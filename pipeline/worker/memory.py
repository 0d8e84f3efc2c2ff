"""In-memory stand-ins for the worker's Kafka clients: a broker of lists.

What a lane and the loop ask of confluent-kafka's ``Consumer`` and ``Producer``, kept in
memory (dramatiq's StubBroker, in spirit): topics as lists of records per partition, the
offsets each group committed (with their metadata), and transactions whose records and
offsets appear together at the commit, or not at all. A group's partitions are handed
out by the test (:meth:`MemoryConsumer.rebalance`), not by a coordinator, through the
callbacks the lane subscribed with. What is not here (fetch sessions, fencing across
processes, rebalance protocols) is what the broker tests cover.
"""

from __future__ import annotations

import itertools
import zlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from jobstream._pipeline.kafka.clients import KafkaConfig
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.runtime.driver import DriverRecord
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker.ports import CancelSource

Partition = tuple[str, int]
Headers = list[tuple[str, bytes]] | None
Rebalance = Callable[[Any, list[TopicPartition]], None]


class MemoryMessage(DriverRecord):
    """A record with the accessors of confluent-kafka's ``Message``, headers and all."""

    __slots__ = ("_headers",)

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None,
                 value: bytes | None, headers: Headers = None) -> None:  # fmt: skip
        super().__init__(topic, partition, offset, key, value)
        self._headers = headers

    def headers(self) -> Headers:
        return self._headers

    def error(self) -> None:
        return None


class MemoryBroker:
    def __init__(self, partitions: int = 1) -> None:
        self.partitions = partitions
        """How many partitions a record keyed for no partition is spread over."""
        self.logs: dict[Partition, list[MemoryMessage]] = defaultdict(list)
        self.committed: dict[str, dict[Partition, TopicPartition]] = defaultdict(dict)
        """Per group, the last offset committed of each partition (with its metadata)."""
        self.fail_commits = 0
        """Transactions still to fail at their commit (abortable): how a test makes one fail."""
        self.round_trip: Callable[[], None] = lambda: None
        """Called by every commit: the driver moves its clock there by a round trip."""
        self.unanswered = False
        """While True, plain records are written but their delivery reports never come:
        how a test cuts a worker's heartbeats off (they reach nobody it can tell)."""

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
               headers: Headers = None) -> MemoryMessage:  # fmt: skip
        if partition < 0:
            partition = zlib.crc32(key or b"") % self.partitions
        log = self.logs[(topic, partition)]
        log.append(MemoryMessage(topic, partition, len(log), key, value, headers))
        return log[-1]

    def records(self, topic: str) -> list[MemoryMessage]:
        """Every record of ``topic``, partition by partition."""
        return [message for (name, _), log in sorted(self.logs.items()) if name == topic
                for message in log]  # fmt: skip


class MemoryConsumer:
    def __init__(self, broker: MemoryBroker, group: str) -> None:
        self.broker, self.group = broker, group
        self._positions: dict[Partition, int] = {}
        self._paused: set[Partition] = set()
        self._turn = itertools.count()
        self._on_assign: Rebalance | None = None
        self._on_revoke: Rebalance | None = None
        self.topics: list[str] = []
        self.revoking: list[Partition] = []
        """The partitions whose revocation callback is under way."""
        self.closed = False

    def subscribe(self, topics: list[str], *, on_assign: Rebalance, on_revoke: Rebalance,
                  on_lost: Rebalance) -> None:  # fmt: skip
        self.topics, self._on_assign, self._on_revoke = topics, on_assign, on_revoke

    def rebalance(self, partitions: list[Partition]) -> None:
        """Give the consumer ``partitions``: those it had and has no more are revoked
        first, then the new ones assigned, each through the lane's callbacks."""
        gone = [tp for tp in self._positions if tp not in partitions]
        if gone and self._on_revoke is not None:
            self.revoking = gone
            self._on_revoke(self, [TopicPartition(t, p) for t, p in gone])
            self.revoking = []
        for key in gone:
            del self._positions[key]
            self._paused.discard(key)
        new = [tp for tp in partitions if tp not in self._positions]
        if not new:
            return
        for tp in self.committed([TopicPartition(t, p) for t, p in new]):
            self._positions[(tp.topic, tp.partition)] = max(tp.offset, 0)
        if self._on_assign is not None:
            self._on_assign(self, [TopicPartition(t, p) for t, p in new])

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self._positions]

    def committed(self, partitions: list[TopicPartition],
                  timeout: float | None = None) -> list[TopicPartition]:  # fmt: skip
        held = self.broker.committed[self.group]
        return [held.get((tp.topic, tp.partition), TopicPartition(tp.topic, tp.partition))
                for tp in partitions]  # fmt: skip

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[MemoryMessage]:
        """Up to ``num_messages`` records of the partitions assigned and not paused,
        taking them in turn; never waits."""
        ready = [tp for tp in self._positions if tp not in self._paused]
        out: list[MemoryMessage] = []
        while ready and len(out) < num_messages:
            tp = ready[next(self._turn) % len(ready)]
            log, position = self.broker.logs[tp], self._positions[tp]
            if position >= len(log):
                ready.remove(tp)
                continue
            out.append(log[position])
            self._positions[tp] = position + 1
        return out

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition,
                               self._positions.get((tp.topic, tp.partition), -1001))
                for tp in partitions]  # fmt: skip

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:  # fmt: skip
        return 0, len(self.broker.logs[(partition.topic, partition.partition)])

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._paused -= {(tp.topic, tp.partition) for tp in partitions}

    @property
    def paused(self) -> set[Partition]:
        return set(self._paused)

    def consumer_group_metadata(self) -> str:
        return self.group

    def close(self) -> None:
        """Leave the group: the partitions are revoked, as librdkafka's close does."""
        self.rebalance([])
        self.closed = True


class MemoryProducer:
    def __init__(self, broker: MemoryBroker, transactional_id: str | None = None) -> None:
        self.broker, self.transactional_id = broker, transactional_id
        self._reports: list[tuple[Callable[[None, MemoryMessage], object], MemoryMessage]] = []
        """Delivery reports of plain records, given at the next poll or flush."""
        self._open = False
        self._records: list[tuple[str, int, bytes | None, bytes | None, Headers]] = []
        self._offsets: list[TopicPartition] = []
        self._group: str | None = None

    def init_transactions(self, timeout: float | None = None) -> None:
        return None

    def begin_transaction(self) -> None:
        self._open, self._records, self._offsets = True, [], []

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None,
                partition: int = -1, on_delivery: object = None,
                headers: Headers = None) -> None:  # fmt: skip
        if self._open:
            self._records.append((topic, partition, key, value, headers))
            return
        message = self.broker.append(topic, partition, key, value, headers)
        if callable(on_delivery) and not self.broker.unanswered:
            self._reports.append((on_delivery, message))

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: str,
                                    timeout: float | None = None) -> None:  # fmt: skip
        self._offsets, self._group = list(offsets), metadata

    def commit_transaction(self, timeout: float | None = None) -> None:
        self.broker.round_trip()
        if self.broker.fail_commits > 0:
            self.broker.fail_commits -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "a failing commit",
                                            txn_requires_abort=True))  # fmt: skip
        for record in self._records:
            self.broker.append(*record)
        if self._group is not None:
            committed = self.broker.committed[self._group]
            for tp in self._offsets:
                committed[(tp.topic, tp.partition)] = tp
        self.abort_transaction()

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._open, self._records, self._offsets, self._group = False, [], [], None

    def flush(self, timeout: float | None = None) -> int:
        self.poll()
        return 0

    def poll(self, timeout: float | None = None) -> int:
        reports, self._reports = self._reports, []
        for on_delivery, message in reports:
            on_delivery(None, message)
        return len(reports)

    def purge(self) -> None:
        self.abort_transaction()

    def __len__(self) -> int:
        return 0


class CancelInbox:
    """Cancels handed in by a test: the worker reads them as it reads jobs.control."""

    def __init__(self) -> None:
        self.waiting: list[CancelRequest] = []

    def start(self, now_ms: int) -> list[CancelRequest]:
        return self.poll()

    def poll(self) -> list[CancelRequest]:
        arrived, self.waiting = self.waiting, []
        return arrived

    def close(self) -> None:
        return None


class MemoryClients:
    """:class:`~jobstream._pipeline.worker.ports.WorkerClients` over a :class:`MemoryBroker`."""

    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker
        self.consumers: list[MemoryConsumer] = []
        self.cancels = CancelInbox()

    def consumer(self, group: str, config: KafkaConfig) -> Consumer:
        consumer = MemoryConsumer(self.broker, group)
        self.consumers.append(consumer)
        return cast(Consumer, consumer)  # the lane uses what MemoryConsumer has

    def producer(self, client_id: str, config: KafkaConfig) -> Producer:
        return cast(Producer, MemoryProducer(self.broker))

    def transactional(self, transactional_id: str) -> Producer:
        return cast(Producer, MemoryProducer(self.broker, transactional_id))

    def control(self, deserialize: Callable[[bytes | None], Event]) -> CancelSource:
        return self.cancels
