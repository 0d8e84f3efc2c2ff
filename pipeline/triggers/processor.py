"""``jobstream trigger-processor``: the triggers on the processor runtime.

A stateless processor whose inputs are the source topics of the triggers in force: each
transaction holds the jobs its records submit to jobs.intake (and their dead letters)
with the consumer's offsets (pipeline/runtime/runner.py, ``send_offsets_to_transaction``),
so a crash neither loses a record nor submits its job under a new id; the job ids are
derived from (trigger, topic, partition, offset) (pipeline/triggers/ids.py), so a replay
submits nothing the timers do not drop as known.

The triggers are followed on jobs.triggers (pipeline/triggers/topic.py); when their sources
change, the open transaction commits and the consumer subscribes to the new set, with no
restart. A source topic that does not exist yet is looked for again every
``MISSING_RECHECK_S``.

The runtime's task keys its work by partition number, made for co-partitioned inputs;
source topics are not, so a partition number is taken in while any source's partition of
that number is assigned and given up only when the last one is: the stateless work of a
number is then never dropped while records of one of its topics are still read (they
would be committed unprocessed).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import Consumer, KafkaException, TopicPartition

from jobstream._pipeline import metrics
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.commit import rewind
from jobstream._pipeline.runtime import Output, Processor, Record, RunnerOptions
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.triggers.board import TriggerBoard
from jobstream._pipeline.triggers.decode import AvroReader, RegistryUnavailableError
from jobstream._pipeline.triggers.engine import Tally, TriggerEngine
from jobstream._pipeline.triggers.topic import TriggersFollower

log = logging.getLogger(__name__)

TRIGGER_OPTIONS = RunnerOptions(poll_ms=100, commit_interval_ms=0)
"""A transaction per loop iteration that read something: a job starts within about a
poll of its record, and no work stays open across a rebalance."""
MISSING_RECHECK_S = 5.0
READY_WAIT_S = 1.0
REGISTRY_RETRY_S = 5.0


class TriggerProcessor(Processor[Tally]):
    name = "triggers"

    def __init__(self, settings: Settings, board: TriggerBoard | None = None) -> None:
        self.topics = Topics(settings)
        self.board = board or TriggerBoard()
        self.follower = TriggersFollower(settings, self.board)
        self.engine = TriggerEngine(self.topics, AvroReader(settings.schema_registry_url))
        self.counts = Counters("matched", "skipped", "refused")
        self.inputs = ()

    def start(self) -> None:
        self.follower.start()

    def close(self) -> None:
        self.follower.stop()

    def open(self, tx: PartitionBatch | None, partition: int) -> Tally:
        return Tally()

    def process(self, state: Tally, record: Record, now_ms: int) -> Iterable[Output]:
        triggers = self.board.snapshot.by_source.get(record.topic() or "", ())
        return self.engine.process(triggers, record, now_ms, state)  # type: ignore[arg-type]

    def committed(self, state: Tally, outputs: Sequence[Output]) -> None:
        for counter, metric, name in ((state.matched, metrics.TRIGGER_MATCHED, "matched"),
                                      (state.skipped, metrics.TRIGGER_SKIPPED, "skipped"),
                                      (state.refused, metrics.TRIGGER_REFUSED, "refused")):
            for label, count in counter.items():
                metric.labels(label).inc(count)
                self.counts.count(name, count)

    def counters(self) -> Mapping[str, object]:
        return {**self.counts.snapshot(), "triggers": len(self.board.snapshot.triggers)}


class TriggerRunner(Runner[Tally]):
    """The runner, with inputs that follow the triggers."""

    processor: TriggerProcessor

    def __init__(self, processor: TriggerProcessor, settings: Settings,
                 options: RunnerOptions = TRIGGER_OPTIONS) -> None:  # fmt: skip
        super().__init__(processor, settings, options)
        self.board = processor.board
        self._stop = threading.Event()
        self._seen_version = -1
        self._subscribed: frozenset[str] | None = None
        self._missing_since: float | None = None
        self._assigned: set[tuple[str, int]] = set()
        self.health.refresh(self._trigger_lag)

    def run(self, stop: threading.Event) -> None:
        self._stop = stop
        super().run(stop)

    def _join(self) -> None:
        self.producer.init_transactions(self.options.kafka_timeout_s)
        while not self.board.ready.wait(READY_WAIT_S):
            if self._stop.is_set():
                return
            log.info("waiting for jobs.triggers to be read")
        self._subscribed = None
        self._follow_sources(force=True)

    def step(self) -> None:
        if self.board.version != self._seen_version or (
                self._missing_since is not None
                and time.monotonic() - self._missing_since > MISSING_RECHECK_S):
            self._follow_sources()
        try:
            super().step()
        except RegistryUnavailableError as exc:
            tx = self.task.take()
            if tx is not None:
                self.task.aborted(tx)
            rewind(self.consumer, self.options.kafka_timeout_s)
            log.warning("%s; reading again in %.0f s", exc, REGISTRY_RETRY_S)
            self._stop.wait(REGISTRY_RETRY_S)

    def _follow_sources(self, *, force: bool = False) -> None:
        """Subscribe to the sources of the triggers in force that exist."""
        self._seen_version = self.board.version
        wanted = self.board.snapshot.sources
        found = set(self.consumer.list_topics(timeout=self.options.kafka_timeout_s).topics)
        present = frozenset(wanted & found)
        missing = sorted(wanted - found)
        self._missing_since = time.monotonic() if missing else None
        if missing:
            log.warning("trigger sources not found yet", extra={"topics": missing})
        if present == self._subscribed and not force:
            return
        self.commit()  # what was read under the old subscription commits with its offsets
        self.processor.inputs = tuple(sorted(present))
        if present:
            self.consumer.subscribe(sorted(present), on_assign=self._on_assign,
                                    on_revoke=self._on_revoke, on_lost=self._on_lost)  # fmt: skip
        else:
            self.consumer.unsubscribe()
            self._drop_partitions()
            self._assigned.clear()
        self._subscribed = present
        log.info("trigger sources followed", extra={"topics": sorted(present)})

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        numbers = {p for _, p in self._assigned}
        self._assigned |= {(tp.topic, tp.partition) for tp in partitions}
        added = [tp for tp in partitions if tp.partition not in numbers]
        super()._on_assign(consumer, added)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Commit what was read before giving partitions up: the open transaction is kept
        by partition number, which another source's partition may still hold, and would
        otherwise commit a revoked partition's jobs later without its offset."""
        if partitions:
            self.commit()
        self._on_lost(consumer, partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions gone (lost: nothing of theirs can commit now): their numbers' share
        of the open transaction is dropped once no source's partition holds them."""
        self._assigned -= {(tp.topic, tp.partition) for tp in partitions}
        numbers = {p for _, p in self._assigned}
        super()._on_revoke(consumer, [tp for tp in partitions if tp.partition not in numbers])

    def health_problem(self) -> str | None:
        if not self._subscribed:
            return None  # no trigger (or none of its sources exists): idle, not ill
        return super().health_problem()

    def _trigger_lag(self) -> None:
        """``jobstream_trigger_lag``: each trigger's source's records not yet read here."""
        try:
            positions = self.consumer.position(self.consumer.assignment())
        except (KafkaException, RuntimeError):
            return
        lag: dict[str, int] = {}
        for tp in positions:
            if tp.offset < 0:
                continue
            try:
                _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            lag[tp.topic] = lag.get(tp.topic, 0) + max(0, high - tp.offset)
        for trigger in self.board.snapshot.triggers.values():
            metrics.TRIGGER_LAG.labels(trigger.label).set(lag.get(trigger.source, 0))


def trigger_runner(settings: Settings, options: RunnerOptions = TRIGGER_OPTIONS) -> TriggerRunner:
    return TriggerRunner(TriggerProcessor(settings), settings, options)
