"""``jobstream status-processor``: the consume-fold-commit loop of the status processor.

One consumer in the status group reads jobs.events. Partition p owns one RocksDB store
and partition p of ``jobs.status.changelog`` (co-partitioned with jobs.events). Each loop
iteration is one Kafka transaction: the events consumed, the leases expired on the wall
clock, the jobs.status records, the LOST and DUPLICATE events, the changelog and the input
offsets commit together, and the stores are written only after the commit (ADR 0001).

Leases expire only on a partition read to its end (librdkafka's partition EOF): while a
backlog is being read (after a restart, under load) the heartbeats in it have not been
seen yet, and expiring then would declare healthy runs lost.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from pipeline import metrics
from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.errors import DeserializationError, TopicMismatchError
from pipeline.kafka import clients
from pipeline.kafka.transaction import send, transact
from pipeline.serde import Event, make_serde
from pipeline.state.partitions import PartitionStores
from pipeline.status.processor import Emit, StatusPolicy, StatusProcessor
from pipeline.status.state import JobRecord, StatusState
from pipeline.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StatusOptions:
    instance_id: str = "0"
    """Stable per process: it names the transactional id and the static group member, so a
    restarted instance fences its predecessor and takes its partitions back at once."""
    state_dir: Path = Path(".jobstream/state")
    lease_ms: int = 30_000
    retention_ms: int = StatusPolicy.retention_ms
    tick_ms: int = 50
    """Longest wait for events per iteration, hence the resolution of lease expiry."""
    batch_size: int = 2000
    expire_limit: int = 1000
    """Leases expired (and records purged) per partition per transaction."""
    stats_interval_s: float = 10.0


@dataclass
class RunnerStats:
    consumed: int = 0
    malformed: int = 0
    """Records on jobs.events that are not Avro events: skipped (and logged)."""
    foreign: int = 0
    """Valid events that are not JobLifecycle: not the status processor's business."""
    statuses: int = 0
    transactions: int = 0
    aborted: int = 0


class StatusRunner:
    def __init__(self, settings: Settings, options: StatusOptions | None = None) -> None:
        self.settings = settings
        self.options = options or StatusOptions()
        self.topics = Topics(settings)
        policy = StatusPolicy(lease_ms=self.options.lease_ms,
                              retention_ms=self.options.retention_ms)  # fmt: skip
        self.processor = StatusProcessor(self.topics, policy)
        self.serialize, self.deserialize = make_serde(settings.schema_registry_url)
        self.stats = RunnerStats()
        self._caught_up: set[int] = set()
        group = f"{settings.topic_prefix}jobstream.status"
        self.consumer, self.producer = clients.processor_clients(
            settings,
            group,
            self.options.instance_id,
            **{"partition.assignment.strategy": "range", "enable.partition.eof": True},
        )
        self.partitions = PartitionStores(
            self.options.state_dir / f"{group}.{self.options.instance_id}",
            self.topics.status_changelog,
            clients.consumer(settings, f"{group}.restore"),
            lambda tx, key, value: StatusState(tx).restore(key, value),
        )

    # -- lifecycle ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self._check_copartitioned()
        self.producer.init_transactions(60)
        self.consumer.subscribe([self.topics.events], on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)  # fmt: skip
        log.info("status processor started", extra={"instance": self.options.instance_id,
                 "lease_ms": self.options.lease_ms})  # fmt: skip
        last_stats = time.monotonic()
        heartbeat = metrics.LOOP_HEARTBEAT.labels("status")
        try:
            while not stop.is_set():
                self.step()
                heartbeat.set(time.time())
                if time.monotonic() - last_stats > self.options.stats_interval_s:
                    last_stats = time.monotonic()
                    self.log_stats()
        finally:
            self.log_stats()
            self.close()

    def _check_copartitioned(self) -> None:
        """Partition p of jobs.events and of the changelog make one store: counts must match."""
        found = self.consumer.list_topics(timeout=30).topics
        names = (self.topics.events, self.topics.status_changelog)
        counts = {name: len(found[name].partitions) if name in found else 0 for name in names}
        if 0 in counts.values() or len(set(counts.values())) > 1:
            raise TopicMismatchError(f"the status processor needs {names[0]} and {names[1]} "
                                     f"with equal partition counts, found {counts} "
                                     "(`jobstream topics create` makes them)")  # fmt: skip

    def log_stats(self) -> None:
        log.info("status stats", extra={**vars(self.stats), **vars(self.processor.counters),
                                        "partitions": sorted(self.partitions.stores)})  # fmt: skip

    def close(self) -> None:
        self.consumer.close()
        self.partitions.close()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.partitions.assign(tp.partition for tp in partitions)
        log.info("status partitions assigned",
                 extra={"partitions": sorted(self.partitions.stores)})  # fmt: skip

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        self._caught_up -= revoked
        self.partitions.revoke(revoked)

    # -- one transaction ---------------------------------------------------------------

    def step(self) -> None:
        """Consume a batch, fold it, expire leases, and commit it all as one transaction."""
        messages = self.consumer.consume(self.options.batch_size,
                                         timeout=self.options.tick_ms / 1000)  # fmt: skip
        if not self.partitions.stores:
            return
        now = now_ms()
        states = self.partitions.begin(StatusState)
        emits: list[Emit] = []
        consumed = 0
        for message in messages:
            p = message.partition() or 0
            if message.error() is not None:
                self._consume_error(message)
                continue
            consumed += 1
            self._caught_up.discard(p)
            state = states.get(p)
            event = self._decode(message) if state is not None else None
            if state is not None and event is not None:
                emits.extend(self.processor.process(state, event.data, now))
        for p, state in states.items():
            if p in self._caught_up:
                emits.extend(self.processor.expire_leases(state, now, self.options.expire_limit))
                self.processor.purge(state, now, self.options.expire_limit)
        if not consumed and not emits and not any(s.changed for s in states.values()):
            return
        self._transact(states, emits, consumed)

    def _consume_error(self, message: Message) -> None:
        error = message.error()
        if error is not None and error.code() == KafkaError._PARTITION_EOF:
            self._caught_up.add(message.partition() or 0)
        else:
            log.warning("consume error: %s", error)

    def _decode(self, message: Message) -> Event | None:
        try:
            event = self.deserialize(message.value())
        except DeserializationError as exc:
            self.stats.malformed += 1
            log.warning("jobs.events record skipped", extra={"reason": str(exc),
                        "partition": message.partition(), "offset": message.offset()})  # fmt: skip
            return None
        if event.name != "JobLifecycle":
            self.stats.foreign += 1
            return None
        return event

    def _transact(self, states: dict[int, StatusState], emits: list[Emit], consumed: int) -> None:
        if not transact(self.producer, self.consumer, lambda: self._produce(states, emits)):
            for state in states.values():
                state.tx.rollback()
            self.stats.aborted += 1
            return
        self.partitions.commit({p: state.tx for p, state in states.items()})
        self.stats.transactions += 1
        self.stats.consumed += consumed

    def _produce(self, states: dict[int, StatusState], emits: list[Emit]) -> None:
        # jobs.status is a compacted view: only a job's last status of the batch matters.
        statuses: dict[bytes, tuple[str, JobRecord]] = {}
        for emit in emits:
            if isinstance(emit.value, JobRecord):
                statuses[emit.key] = (emit.topic, emit.value)
            else:
                self._send(emit.topic, self.serialize(emit.value), emit.key, emit.partition)
        for key, (topic, record) in statuses.items():
            self._send(topic, record.status_json(), key, None)
        self.stats.statuses += len(statuses)
        for p, state in states.items():
            self.partitions.log(self.producer, p, state.flush())
        self.producer.poll(0)

    def _send(self, topic: str, value: bytes, key: bytes, partition: int | None) -> None:
        if partition is None:
            send(self.producer, topic, value, key)
        else:
            send(self.producer, topic, value, key, partition=partition)
