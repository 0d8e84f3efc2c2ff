"""Keeps the views up to date: reads jobs.intake, jobs.status, jobs.events, jobs.workers,
jobs.results and jobs.logs and folds every record into the view store (of jobs.results and
jobs.logs, only where each result and each run's log lines are: connectors/views/results.py
and runlogs.py read them back).

The updater assigns itself every partition of its six topics (no consumer group: each
API process keeps views of its own) and starts each from the offset its store recorded,
or from the beginning. A batch of records and the offsets after them are written in one
RocksDB batch, so a restart resumes where the files end and a crash neither loses nor
repeats a record's effect (folding one twice changes nothing anyway). ``rebuild`` wipes
the store and reads everything again from offset zero. Ended jobs leave the views after
the retention (:meth:`ViewBatch.purge`, once a minute). After each batch is written, the
documents it changed go to the ``listeners`` (the API's live stream), and every lifecycle
event is counted in :attr:`activity` (the dashboard's throughput and lateness).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from jobstream._connectors.views.activity import Activity
from jobstream._connectors.views.store import ViewBatch, ViewStore
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError, JobstreamError, ValidationError
from jobstream._pipeline.growth.strays import is_forwarded
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.model.records import JobSubmitted, ScheduleChanged
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.serde import Event, decode_status, make_serde
from jobstream._pipeline.status.record import is_internal
from jobstream._pipeline.timers.intake import Workflow, checked
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.results import EXECUTION_HEADER

log = logging.getLogger(__name__)

PURGE_INTERVAL_S = 60.0
STALE_AFTER_S = 30.0

Listener = Callable[[list[dict[str, Any]]], None]
"""Called on the updater's thread with the documents one batch changed, once written."""


class UpdaterStats(Counters):
    """Records ``folded``, records ``skipped`` (no decoder reads them: logged once each,
    counted here), ended jobs ``purged`` and ``batches`` written, since start."""

    def __init__(self) -> None:
        super().__init__("folded", "skipped", "purged", "batches")
        self.last_loop = time.monotonic()
        """When the loop last turned (:meth:`ViewUpdater.health`)."""


class ViewUpdater:
    """Folds the six topics into ``store``; :meth:`run` loops until stopped."""

    def __init__(self, settings: Settings, store: ViewStore, *, retention_ms: int,
                 metadata_timeout_s: float = 30.0) -> None:  # fmt: skip
        self.settings = settings
        self.store = store
        self.retention_ms = retention_ms
        self.timeout_s = metadata_timeout_s
        self.topics = Topics(settings)
        self._handlers: dict[str, Callable[[ViewBatch, Message], None]] = {
            self.topics.intake: self._intake,
            self.topics.status: self._status,
            self.topics.events: self._event,
            self.topics.workers: self._worker,
            self.topics.results: self._result,
            self.topics.logs: self._logs,
        }
        _, self._deserialize = make_serde(settings.schema_registry_url)
        self.stats = UpdaterStats()
        self.activity = Activity()
        self.listeners: list[Listener] = []
        self._consumer: Consumer | None = None
        self._next_purge = 0.0
        self._ends: dict[tuple[str, int], int] = {}

    # -- lifecycle ------------------------------------------------------------------------

    def open(self) -> None:
        """Assign every input partition from the offset the store holds (from the start
        when its files are in an older layout)."""
        self.store.ensure_layout()
        group = f"{self.settings.topic_prefix}jobstream.views.unused"
        consumer = clients.consumer(self.settings, group, **clients.BATCHED_FETCH)
        metadata = consumer.list_topics(timeout=self.timeout_s).topics
        stored = self.store.offsets()
        assignment = []
        for topic in self._handlers:
            found = metadata.get(topic)
            if found is None or found.error is not None or not found.partitions:
                consumer.close()
                raise JobstreamError(f"topic {topic} not found: run `jobstream topics create`")
            for p in sorted(found.partitions):
                start = stored.get((topic, p), OFFSET_BEGINNING)
                assignment.append(TopicPartition(topic, p, start))
                self._ends[(topic, p)] = watermarks(consumer, TopicPartition(topic, p))[1]
        consumer.assign(assignment)
        self._consumer = consumer
        log.info("views open", extra={"path": str(self.store.path), "partitions": len(assignment),
                                      "resumed": len(stored)})  # fmt: skip

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def run(self, stop: threading.Event) -> None:
        """Fold records until ``stop`` is set."""
        if self._consumer is None:
            self.open()
        while not stop.is_set():
            self.step()

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Wipe the views and fold every record up to the current ends; returns how many.

        ``progress(done, total)`` is called after each batch.
        """
        self.close()
        self.store.wipe()
        self.open()
        total = sum(self._ends.values())
        while not self.caught_up():
            self.step()
            if progress is not None:
                progress(min(self._position_total(), total), total)
        return self.stats.folded

    # -- one turn of the loop -------------------------------------------------------------

    def step(self, timeout_s: float = 0.2) -> int:
        """Fold one batch of records (and purge when due); returns how many were folded."""
        assert self._consumer is not None, "open() first"
        # The first record ends the wait and the records fetched already join it: asked for
        # 5000 at once, librdkafka waits out the timeout whenever fewer come, and every
        # status shown (a run's progress among them) would be up to that much later.
        messages = self._consumer.consume(1, timeout=timeout_s)
        if messages:
            messages += self._consumer.consume(4999, timeout=0)
        batch = self.store.batch()
        folded = 0
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("view read error: %s", error)
                continue
            topic, partition = str(message.topic()), int(message.partition() or 0)
            self._handlers[topic](batch, message)
            batch.offset(topic, partition, int(message.offset() or 0) + 1)
            folded += 1
        updated = list(batch.updated.values())
        batch.commit()
        if updated:
            for listener in self.listeners:
                listener(updated)
        self.stats.folded += folded
        self.stats.batches += 1 if folded else 0
        self._purge_if_due()
        self.stats.last_loop = time.monotonic()
        return folded

    def _purge_if_due(self) -> None:
        now = time.monotonic()
        if now < self._next_purge:
            return
        self._next_purge = now + PURGE_INTERVAL_S
        before = int(time.time() * 1000) - self.retention_ms
        while True:
            batch = self.store.batch()
            purged = batch.purge(before)
            batch.commit()
            self.stats.purged += purged
            if purged < 1000:
                break

    # -- where it stands ------------------------------------------------------------------

    def _position_total(self) -> int:
        offsets = self.store.offsets()
        return sum(min(offsets.get(tp, 0), end) for tp, end in self._ends.items())

    def caught_up(self) -> bool:
        """Every partition read up to the end it had when the updater opened."""
        offsets = self.store.offsets()
        return all(offsets.get(tp, 0) >= end for tp, end in self._ends.items() if end > 0)

    def health(self) -> str | None:
        """None while the loop turns; what is wrong otherwise."""
        idle = time.monotonic() - self.stats.last_loop
        if idle > STALE_AFTER_S:
            return f"view updater loop stalled for {idle:.0f} s"
        return None

    # -- decoding each topic --------------------------------------------------------------

    def _skip(self, message: Message, reason: str) -> None:
        self.stats.skipped += 1
        log.warning("view skipped a record", extra={
            "topic": message.topic(), "partition": message.partition(),
            "offset": message.offset(), "reason": reason,
        })  # fmt: skip

    def _decode(self, message: Message, *names: str) -> Event | None:
        value = message.value()
        if not value:
            return None
        try:
            event = self._deserialize(value)
        except DeserializationError as exc:
            self._skip(message, exc.reason)
            return None
        return event if event.name in names else None

    def _intake(self, batch: ViewBatch, message: Message) -> None:
        event = self._decode(message, "JobSubmitted", "WorkflowSubmitted", "WorkflowCancelled",
                             "ScheduleChanged")  # fmt: skip
        if event is None:
            return
        if event.name == "WorkflowCancelled":
            batch.workflow_cancelled(event.data)
            return
        if event.name == "ScheduleChanged" and event.data.owner is None:
            return  # a job's: its status tells
        try:  # what the timers refuse (to jobs.intake.dlq), by the same check, the view skips
            command = checked(event, now_ms())
        except ValidationError as exc:
            self._skip(message, str(exc))
            return
        if isinstance(command, ScheduleChanged):
            batch.workflow_updated(command)  # a recurring workflow's new schedule or steps
            return
        if isinstance(command, Workflow) and command.schedule is not None:
            batch.workflow_schedule(event.data)  # a template: its steps are no jobs
            return
        jobs: list[JobSubmitted] = (
            [job for _, job in command.steps] if isinstance(command, Workflow) else [event.data]
        )
        location = (int(message.partition() or 0), int(message.offset() or 0))
        for job in jobs:
            batch.submitted(job, location)

    def _event(self, batch: ViewBatch, message: Message) -> None:
        if is_forwarded(message):  # a grow's copy: its original is folded where it was written
            return
        event = self._decode(message, "JobLifecycle")
        if event is not None:
            batch.event(event.data)
            self.activity.record(event.data, now_ms())

    def _worker(self, batch: ViewBatch, message: Message) -> None:
        value = message.value()
        if not value:
            batch.worker((message.key() or b"").decode(), None)
            return
        event = self._decode(message, "WorkerHeartbeat")
        if event is not None:
            batch.worker(event.data.worker_id, event.data)

    def _result(self, batch: ViewBatch, message: Message) -> None:
        key = message.key()
        if not key or message.value() is None:  # a tombstone: nothing to serve
            return
        location = (int(message.partition() or 0), int(message.offset() or 0))
        batch.result(key.decode(errors="replace"),
                     header(message.headers(), EXECUTION_HEADER), location)  # fmt: skip

    def _logs(self, batch: ViewBatch, message: Message) -> None:
        key, execution_id = message.key(), header(message.headers(), EXECUTION_HEADER)
        if key and execution_id and message.value() is not None:
            location = (int(message.partition() or 0), int(message.offset() or 0))
            batch.run_logs(key.decode(errors="replace"), execution_id, location)

    def _status(self, batch: ViewBatch, message: Message) -> None:
        value = message.value()
        # A tombstone (a job purged after the status processor's retention, or moved by a
        # grow of jobs.events) removes nothing: the view's own retention decides when a job
        # leaves it. The status store's own records are no job's.
        if not value or is_internal(message.key(), message.headers()):
            return
        try:
            batch.status(decode_status(value))
        except DeserializationError as exc:
            self._skip(message, exc.reason)
