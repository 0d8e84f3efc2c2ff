"""``jobstream retry-router``: the router's consume-route-commit loop on jobs.events.

The same shape as the timer processors (pipeline/timers/runner.py): a consumer with
static membership, a transactional producer named after the instance, and one Kafka
transaction per batch holding the routed records and the input offsets, so a crash
neither loses a failure nor retries it twice. The router keeps no state, so there is no
store to restore and any instance can take any partition of jobs.events. Most of
jobs.events is not failures: those records are passed over on their kind byte
(pipeline/serde/peek.py) without being decoded.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass

from confluent_kafka import Message

from pipeline import metrics
from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.errors import DeserializationError
from pipeline.kafka import clients
from pipeline.kafka.admin import ensure_topics
from pipeline.kafka.transaction import send, transact
from pipeline.retry.policy import RetryDefaults
from pipeline.retry.router import FAILURE_KINDS, Output, RetryRouter
from pipeline.serde import Event, make_serde
from pipeline.serde.peek import LIFECYCLE_KINDS, lifecycle_kind
from pipeline.topics import Topics

log = logging.getLogger(__name__)

PASSED_OVER = frozenset(LIFECYCLE_KINDS) - FAILURE_KINDS
"""Kinds the router has nothing to do with: skipped without decoding (most of jobs.events)."""


@dataclass(frozen=True)
class RouterOptions:
    instance_id: str = "0"
    """Stable per process: it names the transactional id and the static group member, so a
    restarted instance fences what its predecessor left open and takes its partitions back."""
    batch_size: int = 2000
    """Records per transaction at most."""
    poll_ms: int = 100
    """Longest wait for records; it bounds how soon a stop request is noticed."""
    stats_interval_s: float = 10.0


@dataclass
class RunnerStats:
    consumed: int = 0
    undecodable: int = 0
    transactions: int = 0
    aborted: int = 0


class RetryRunner:
    def __init__(self, settings: Settings, options: RouterOptions | None = None,
                 defaults: RetryDefaults | None = None) -> None:  # fmt: skip
        self.settings = settings
        self.options = options or RouterOptions()
        self.topics = Topics(settings)
        self.router = RetryRouter(self.topics, defaults)
        self.serialize, self.deserialize = make_serde(settings.schema_registry_url)
        self.stats = RunnerStats()
        self._known_topics: set[str] = set()
        group = f"{settings.topic_prefix}jobstream.retry"
        self.consumer, self.producer = clients.processor_clients(
            settings, group, self.options.instance_id, **clients.BATCHED_FETCH
        )

    def run(self, stop: threading.Event) -> None:
        self.producer.init_transactions(60)
        self._known_topics = set(self.consumer.list_topics(timeout=30).topics)
        self.consumer.subscribe([self.topics.events])
        log.info("retry router started", extra={"instance": self.options.instance_id})
        last_stats, reported = time.monotonic(), (0, 0)
        heartbeat = metrics.LOOP_HEARTBEAT.labels("retry-router")
        try:
            while not stop.is_set():
                self.step()
                heartbeat.set(time.time())
                if time.monotonic() - last_stats > self.options.stats_interval_s:
                    last_stats = time.monotonic()
                    reported = self._report(reported)
        finally:
            self.consumer.close()

    def step(self) -> None:
        """Consume a batch, route the failures in it, and commit it as one transaction."""
        messages = self.consumer.consume(self.options.batch_size,
                                         timeout=self.options.poll_ms / 1000)  # fmt: skip
        if not messages:
            return
        # A rebalance served inside consume() may have taken partitions away: their
        # records belong to the new owner, which resumes from the committed offsets.
        owned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        now = now_ms()
        outputs: list[Output] = []
        consumed = 0
        for message in messages:
            if message.error() is not None:
                log.warning("consume error: %s", message.error())
                continue
            if (message.topic(), message.partition()) not in owned:
                continue
            consumed += 1
            if lifecycle_kind(message.value()) in PASSED_OVER:
                continue
            event = self._decode(message)
            if event is not None:
                outputs.extend(self.router.route(event, now))
        if consumed:
            self._transact(outputs, consumed)

    def _decode(self, message: Message) -> Event | None:
        try:
            return self.deserialize(message.value())
        except DeserializationError:
            # jobs.events is written by jobstream's own components; a record none of the
            # schemas reads is skipped and counted rather than stopping every retry.
            self.stats.undecodable += 1
            return None

    def _transact(self, outputs: list[Output], consumed: int) -> None:
        if not transact(self.producer, self.consumer, lambda: self._produce(outputs)):
            self.stats.aborted += 1
            return
        self.stats.transactions += 1
        self.stats.consumed += consumed

    def _produce(self, outputs: list[Output]) -> None:
        for output in outputs:
            if output.topic not in self._known_topics:
                self._ensure_dead_letter_topic(output)
            send(self.producer, output.topic, self.serialize(output.event), output.key)

    def _ensure_dead_letter_topic(self, output: Output) -> None:
        """A job type seen for the first time gets its dead-letter topic."""
        if output.event.name == "DeadLettered":
            job_type = output.event.data["spec"]["job_type"]
            specs = [s for s in self.topics.job_type_specs(job_type) if s.name == output.topic]
            ensure_topics(self.settings.kafka_config, specs,
                          replication_factor=self.settings.replication_factor)  # fmt: skip
        self._known_topics.add(output.topic)

    def _report(self, reported: tuple[int, int]) -> tuple[int, int]:
        """Log the counters; warn when records were skipped since the last report."""
        skipped = (self.router.stats.unroutable, self.stats.undecodable)
        fields = {**asdict(self.stats), **asdict(self.router.stats)}
        if skipped != reported:
            log.warning("retry router skipped records it cannot route", extra=fields)
        else:
            log.info("retry router stats", extra=fields)
        return skipped
