"""``jobstream status-processor``: the consume-fold-commit loop of the status processor.

One consumer in the status group reads jobs.events. Partition p owns one RocksDB store
and partition p of ``jobs.status.changelog`` (co-partitioned with jobs.events). One Kafka
transaction spans the loop iterations of up to ``commit_interval_ms`` (or
``commit_max_events``): the events consumed, the leases expired on the wall clock, the
jobs.status records, the LOST and DUPLICATE events, the changelog and the input offsets
commit together, and the stores are written only after the commit (ADR 0001). An abort
drops the whole transaction and rewinds the consumer to the committed offsets; a partition
revoked while a transaction is open drops its own share of it, which its next owner redoes.

Each transaction costs the broker a marker on every partition it wrote, and every job's
status and record are written once per transaction however many of its events it holds:
fewer, larger transactions are what let the broker keep up, for statuses later by up to
the interval.

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
from pipeline.state.transaction import PartitionTransaction
from pipeline.status.batch import OpenTransaction, commit_due
from pipeline.status.processor import StatusPolicy, StatusProcessor
from pipeline.status.state import JobRecord, RecordCache, StatusState
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
    """Events taken per ``consume()`` call."""
    commit_interval_ms: int = 100
    """How long a transaction stays open for more events, from its first one (0: commit
    every iteration)."""
    commit_max_events: int = 10_000
    """A transaction that folded (or emitted) this many records commits before its interval."""
    expire_limit: int = 1000
    """Leases expired (and records purged) per partition per iteration."""
    cached_records: int = 10_000
    """Committed job records kept decoded per partition between transactions (a job's
    events usually span a few): about 1 KB each."""
    stats_interval_s: float = 10.0

    def __post_init__(self) -> None:
        if min(self.commit_interval_ms, self.cached_records) < 0:
            raise ValueError("commit_interval_ms and cached_records must be >= 0")
        if min(self.commit_max_events, self.batch_size) < 1:
            raise ValueError("commit_max_events and batch_size must be >= 1")


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
    dropped: int = 0
    """Events folded into an open transaction, then dropped with their revoked partition
    (its next owner reads them again)."""


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
        self._open: OpenTransaction | None = None
        self._caches: dict[int, RecordCache] = {}
        group = f"{settings.topic_prefix}jobstream.status"
        self.consumer, self.producer = clients.processor_clients(
            settings,
            group,
            self.options.instance_id,
            **{"partition.assignment.strategy": "range", "enable.partition.eof": True,
               **clients.BATCHED_FETCH},
        )
        self.partitions = PartitionStores(
            self.options.state_dir / f"{group}.{self.options.instance_id}",
            self.topics.status_changelog,
            clients.consumer(settings, f"{group}.restore"),
            lambda tx, key, value: StatusState(tx).restore(key, value),
        )

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Check the topics, fence any predecessor's transaction and join the group."""
        self._check_copartitioned()
        self.producer.init_transactions(60)
        self.consumer.subscribe([self.topics.events], on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)  # fmt: skip
        log.info("status processor started", extra={"instance": self.options.instance_id,
                 "lease_ms": self.options.lease_ms})  # fmt: skip

    def run(self, stop: threading.Event) -> None:
        self.start()
        last_stats = time.monotonic()
        heartbeat = metrics.LOOP_HEARTBEAT.labels("status")
        try:
            while not stop.is_set():
                self.step()
                heartbeat.set(time.time())
                if time.monotonic() - last_stats > self.options.stats_interval_s:
                    last_stats = time.monotonic()
                    self.log_stats()
            self.commit()  # what was folded before the stop
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
        if self._open is not None:  # assigned while a transaction is open: it takes them in
            for tp in partitions:
                tx = PartitionTransaction(self.partitions.stores[tp.partition])
                self._open.open(tp.partition, self._state(tx, tp.partition))
        log.info("status partitions assigned",
                 extra={"partitions": sorted(self.partitions.stores)})  # fmt: skip

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        self._caught_up -= revoked
        if self._open is not None:
            self.stats.dropped += self._open.drop(revoked)
        for p in revoked:  # its next owner changes its records
            self._caches.pop(p, None)
        self.partitions.revoke(revoked)

    # -- transactions --------------------------------------------------------------------

    def step(self) -> None:
        """Consume a batch, fold it and expire leases into the open transaction; commit the
        transaction when it is due (:func:`commit_due`)."""
        messages = self.consumer.consume(self.options.batch_size,
                                         timeout=self.options.tick_ms / 1000)  # fmt: skip
        if not self.partitions.stores:
            return
        now = now_ms()
        tx = self._open or self._begin()
        for message in messages:
            p = message.partition() or 0
            if message.error() is not None:
                self._consume_error(message)
                continue
            self._caught_up.discard(p)
            state = tx.state(p)
            if state is None:  # not owned (a revoke raced the fetch): not ours to commit
                continue
            event = self._decode(message)
            tx.fold(p, () if event is None else self.processor.process(state, event.data, now),
                    consumed=1)  # fmt: skip
        for p in self._caught_up & tx.partitions.keys():
            state = tx.partitions[p].state
            tx.fold(p, self.processor.expire_leases(state, now, self.options.expire_limit))
            self.processor.purge(state, now, self.options.expire_limit)
        if not tx.pending:
            self._open = None  # nothing yet: the interval starts with the first record
            return
        age_ms = (time.monotonic() - tx.started) * 1000
        if commit_due(age_ms, tx.size, interval_ms=self.options.commit_interval_ms,
                      max_events=self.options.commit_max_events):  # fmt: skip
            self.commit()

    def _begin(self) -> OpenTransaction:
        self._open = OpenTransaction(started=time.monotonic())
        for p, state in self.partitions.begin(self._state).items():
            self._open.open(p, state)
        return self._open

    def _state(self, tx: PartitionTransaction, partition: int) -> StatusState:
        cache = self._caches.get(partition)
        if cache is None:
            cache = self._caches[partition] = RecordCache(self.options.cached_records)
        return StatusState(tx, partition, cache)

    @property
    def uncommitted(self) -> int:
        """Events folded into the open transaction."""
        return 0 if self._open is None else self._open.consumed

    def commit(self) -> None:
        """Commit the open transaction, if it holds anything: Kafka first, then the stores."""
        tx, self._open = self._open, None
        if tx is None or not tx.pending:
            return
        if not transact(self.producer, self.consumer, lambda: self._produce(tx)):
            tx.rollback()
            self.stats.aborted += 1
            return
        self.partitions.commit({p: work.state.tx for p, work in tx.partitions.items()})
        for work in tx.partitions.values():
            work.state.committed()
        self.stats.transactions += 1
        self.stats.consumed += tx.consumed

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

    def _produce(self, tx: OpenTransaction) -> None:
        for emit in tx.emits():
            if isinstance(emit.value, JobRecord):
                self._send(emit.topic, emit.value.status_json(), emit.key, None)
                self.stats.statuses += 1
            else:
                self._send(emit.topic, self.serialize(emit.value), emit.key, emit.partition)
        for p, work in tx.partitions.items():
            self.partitions.log(self.producer, p, work.state.flush())
        self.producer.poll(0)

    def _send(self, topic: str, value: bytes, key: bytes, partition: int | None) -> None:
        if partition is None:
            send(self.producer, topic, value, key)
        else:
            send(self.producer, topic, value, key, partition=partition)
