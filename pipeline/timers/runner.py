"""``jobstream timers``: the timer processors' consume-fire-commit loop.

One consumer in the timers group reads jobs.intake and jobs.retry. Partition p of both
(co-partitioned; the range assignor hands them out together) owns one RocksDB store and
partition p of the changelog. Each loop iteration is one Kafka transaction: the records
consumed, the firings due on the wall clock, the changelog, the executions and the input
offsets commit together, and the stores are written only after the commit.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Message, TopicPartition

from pipeline import metrics
from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.errors import DeserializationError, ValidationError
from pipeline.kafka import clients
from pipeline.kafka.admin import ensure_topics
from pipeline.kafka.transaction import send, transact
from pipeline.serde import make_serde
from pipeline.state.partitions import PartitionStores
from pipeline.timers.processor import Emit, TimerPolicy, TimerProcessor
from pipeline.timers.state import TimerState
from pipeline.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TimerOptions:
    instance_id: str = "0"
    """Stable per process: it names the transactional id, so a restarted instance fences
    (and aborts) the transaction its predecessor left open."""
    state_dir: Path = Path(".jobstream/state")
    tick_ms: int = 20
    """Wall-clock ticker: the longest a due job waits for the next scan."""
    batch_size: int = 2000
    fire_limit: int = 5000
    """Firings per transaction, shared by the partitions; more wait for the next one. It
    bounds a transaction's records, memory and duration (well within its timeout)."""
    stats_interval_s: float = 10.0


@dataclass
class TimerStats:
    consumed: int = 0
    fired: int = 0
    dead_lettered: int = 0
    transactions: int = 0
    aborted: int = 0
    max_lateness_ms: int = 0
    partitions: list[int] = field(default_factory=list)



class TimerRunner:
    def __init__(self, settings: Settings, options: TimerOptions | None = None,
                 policy: TimerPolicy | None = None) -> None:  # fmt: skip
        self.settings = settings
        self.options = options or TimerOptions()
        self.topics = Topics(settings)
        self.processor = TimerProcessor(self.topics, policy)
        self.serialize, self.deserialize = make_serde(settings.schema_registry_url)
        self.stats = TimerStats()
        self._known_topics: set[str] = set()
        group = f"{settings.topic_prefix}jobstream.timers"
        self.consumer, self.producer = clients.processor_clients(
            settings, group, self.options.instance_id,
            **{"partition.assignment.strategy": "range", **clients.TICK_FETCH},
        )
        self.partitions = PartitionStores(
            self.options.state_dir / f"{group}.{self.options.instance_id}",
            self.topics.timers_changelog,
            clients.consumer(settings, f"{group}.restore"),
            lambda tx, key, value: TimerState(tx).restore(key, value),
        )

    # -- lifecycle ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self.producer.init_transactions(60)
        self._known_topics = set(self.consumer.list_topics(timeout=30).topics)
        self.consumer.subscribe([self.topics.intake, self.topics.retry],
                                on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)  # fmt: skip
        log.info("timers started", extra={"instance": self.options.instance_id})
        last_stats = time.monotonic()
        try:
            heartbeat = metrics.LOOP_HEARTBEAT.labels("timers")
            while not stop.is_set():
                self.step()
                heartbeat.set(time.time())
                if time.monotonic() - last_stats > self.options.stats_interval_s:
                    last_stats = time.monotonic()
                    log.info("timers stats", extra=vars(self.stats))
        finally:
            self.close()

    def close(self) -> None:
        self.consumer.close()
        self.partitions.close()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.partitions.assign(tp.partition for tp in partitions)
        self.stats.partitions = sorted(self.partitions.stores)
        metrics.TIMER_PARTITIONS.set(len(self.stats.partitions))
        log.info("timer partitions assigned", extra={"partitions": self.stats.partitions})

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.partitions.revoke(tp.partition for tp in partitions)
        self.stats.partitions = sorted(self.partitions.stores)

    # -- one transaction ---------------------------------------------------------------

    def step(self) -> None:
        """Consume a batch, fire what is due, and commit it all as one transaction."""
        messages = self.consumer.consume(self.options.batch_size,
                                         timeout=self.options.tick_ms / 1000)  # fmt: skip
        if not self.partitions.stores:
            return
        now = now_ms()
        states = self.partitions.begin(lambda tx, _p: TimerState(tx))
        emits: list[Emit] = []
        dead: list[tuple[Message, str]] = []
        for message in messages:
            if message.error() is not None:
                log.warning("consume error: %s", message.error())
                continue
            state = states.get(message.partition() or 0)
            if state is None:
                continue
            try:
                emits.extend(self.processor.process(state, self.deserialize(message.value()), now))
            except (DeserializationError, ValidationError) as exc:
                dead.append((message, str(exc)))
        share = max(1, self.options.fire_limit // len(states))
        for state in states.values():
            emits.extend(self.processor.fire_due(state, now, share))
        if not messages and not emits and not any(s.changelog for s in states.values()):
            return
        self._transact(states, emits, dead, consumed=len(messages))

    def _transact(self, states: dict[int, TimerState], emits: list[Emit],
                  dead: list[tuple[Message, str]], consumed: int) -> None:  # fmt: skip
        if not transact(self.producer, self.consumer, lambda: self._produce(states, emits, dead)):
            for state in states.values():
                state.tx.rollback()
            self.stats.aborted += 1
            metrics.TIMER_ABORTED.inc()
            return
        self.partitions.commit({p: state.tx for p, state in states.items()})
        self._count(emits, dead, consumed)

    def _produce(self, states: dict[int, TimerState], emits: list[Emit],
                 dead: list[tuple[Message, str]]) -> None:  # fmt: skip
        for emit in emits:
            if emit.topic not in self._known_topics:
                self._ensure_job_type_topics(emit)
            send(self.producer, emit.topic, self.serialize(emit.event), emit.key)
        for p, state in states.items():
            self.partitions.log(self.producer, p, state.changelog)
        for message, reason in dead:
            source = f"{message.topic()}/{message.partition()}/{message.offset()}"
            headers: list[tuple[str, str | bytes | None]] = [
                ("jobstream.error", reason.encode()),
                ("jobstream.source", source.encode()),
            ]
            send(self.producer, self.topics.intake_dlq, message.value(), message.key(),
                 headers=headers)
            log.warning("intake record dead-lettered", extra={"reason": reason,
                        "topic": message.topic(), "offset": message.offset()})  # fmt: skip
        self.producer.poll(0)

    def _ensure_job_type_topics(self, emit: Emit) -> None:
        """A job type seen for the first time gets its execution and dead-letter topics."""
        spec = emit.event.data.get("spec") or {}
        if "job_type" in spec:
            specs = list(self.topics.job_type_specs(spec["job_type"]))
            ensure_topics(self.settings.kafka_config, specs,
                          replication_factor=self.settings.replication_factor)  # fmt: skip
            self._known_topics.update(s.name for s in specs)
        self._known_topics.add(emit.topic)

    def _count(self, emits: list[Emit], dead: list[tuple[Message, str]], consumed: int) -> None:
        self.stats.transactions += 1
        self.stats.consumed += consumed
        self.stats.dead_lettered += len(dead)
        fired = 0
        for emit in emits:
            if emit.event.name == "ExecutionRequested":
                fired += 1
                lateness = emit.event.data["fired_at_ms"] - emit.event.data["scheduled_at_ms"]
                self.stats.max_lateness_ms = max(self.stats.max_lateness_ms, lateness)
                metrics.FIRE_LATENESS.observe(lateness / 1000)
        self.stats.fired += fired
        metrics.TIMER_FIRED.inc(fired)
        metrics.TIMER_CONSUMED.inc(consumed)
        metrics.TIMER_DEAD_LETTERED.inc(len(dead))
