"""``jobstream worker``: consume executions, run their handlers, report outcomes.

The shell around the worker's decisions (pipeline/worker/engine.py and supervisor.py):
it owns the clients, the threads and the waiting, and carries out the actions the engine
returns (pipeline/worker/actions.py). One thread owns every Kafka client (confluent-kafka's
consumer is not thread-safe) and loops: fetch into the tier buffers of each job type's
:class:`Lane`; hand the runs that ended and the cancels that arrived to the engine; claim
(commit the STARTED records and offsets of) the runs it started, then launch them; commit
each lane's outcomes in a transaction once its commit is due (every
``commit_interval_s`` under load, with the next claim, at once for an outcome of a
workflow's job: see pipeline/runtime/schedule.py); pause what is full.
Handlers run on :class:`JobExecutor`'s threads and event loop (or child processes, with
``isolation="process"``) and hand their ends back through a queue. Each iteration waits
(at most ``poll_timeout_s``) only for what could let it do something: a run to end when
every slot is taken, records to arrive when a slot is free and nothing is buffered.

- HEARTBEAT goes through a plain idempotent producer, flushed before each transaction
  with outcomes; the final outcome waits for a transaction, and with it the run's log
  lines go to jobs.logs (pipeline/worker/runlogs.py).
- Concurrency limits: before a limited type's partitions are revoked the loop lets its
  runs end and reports them (:meth:`_await_runs`), so the next owner of an index starts
  nothing while a run of it goes on here (docs/adr/0003-concurrency-limits.md); so it
  does for a lane holding runs with a concurrency key (docs/adr/0008-concurrency-keys.md).
- Cancels come from jobs.control (pipeline/worker/control.py), read from its retention's
  start before the first run.
- Shutdown (``stop`` set, e.g. by SIGTERM): DRAINING, fetch nothing more, wait up to
  ``drain_timeout_s`` for running jobs and commit their outcomes without waiting for the
  commit interval. Jobs still running then are given up: each is reported FAILED
  (``WorkerStopped``, retryable), so its retry runs elsewhere without waiting for a lease.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial

from confluent_kafka import Consumer, KafkaError

from jobstream._pipeline import metrics
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka.clients import GROWN_PARTITIONS_SEEN
from jobstream._pipeline.runtime.health import LoopHealth
from jobstream._pipeline.runtime.lag import ConsumerLag
from jobstream._pipeline.runtime.schedule import CommitSchedule
from jobstream._pipeline.serde import Event, event_schemas, make_serde
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.actions import Action, Claim, Emit, Expire, Kill, Launch, Stop
from jobstream._pipeline.worker.app import WorkerApp
from jobstream._pipeline.worker.engine import WorkerEngine
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.heartbeat import (
    DRAINING,
    RUNNING,
    STARTING,
    STOPPED,
    WorkerIdentity,
)
from jobstream._pipeline.worker.keyed import KeyedRuns
from jobstream._pipeline.worker.lane import Lane
from jobstream._pipeline.worker.lease import RunLease
from jobstream._pipeline.worker.options import MIN_PREFETCH, WorkerOptions
from jobstream._pipeline.worker.ports import (
    SYSTEM_CLOCK,
    Clock,
    Executor,
    KafkaClients,
    WorkerClients,
)
from jobstream._pipeline.worker.processes import ProcessExecutor
from jobstream._pipeline.worker.started import StartedEncoder
from jobstream._pipeline.worker.together import Together
from jobstream._pipeline.worker.topic_checks import create_missing_topics

log = logging.getLogger(__name__)

ExecutorFactory = Callable[[Callable[[Finished], None]], Executor]


class WorkerLoop:
    def __init__(self, settings: Settings, app: WorkerApp, options: WorkerOptions | None = None,
                 *, clients: WorkerClients | None = None, clock: Clock = SYSTEM_CLOCK,
                 executor: ExecutorFactory | None = None) -> None:  # fmt: skip
        self.settings, self.app = settings, app
        self.options = options = options or WorkerOptions()
        self.job_types = options.job_types or app.job_types
        if not self.job_types:
            raise ConfigurationError("the worker app registers no handler")
        for job_type in self.job_types:
            app.get(job_type)  # raises ConfigurationError naming a type with no handler
        if options.concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {options.concurrency}")
        if options.isolation not in ("thread", "process"):
            raise ConfigurationError(f"isolation: 'thread' or 'process', not {options.isolation!r}")
        self.clock = clock
        clients = clients or KafkaClients(settings)
        self.topics = Topics(settings)
        self.serialize, deserialize = make_serde(settings.schema_registry_url)
        prefetch = options.prefetch or max(options.concurrency, MIN_PREFETCH)
        # Delivery reports only for failures: _on_delivery only logs those, and a report
        # per record is a Python callback each. A linger of 50 ms, not 5, puts ten times
        # as many HEARTBEAT records in a request.
        self.events = clients.producer(f"jobstream.worker.{options.worker_id}",
                                       {"delivery.report.only.error": True, "linger.ms": 50,
                                        **GROWN_PARTITIONS_SEEN})  # fmt: skip
        keyed = KeyedRuns()  # a key's runs are counted over every lane of the worker
        self.lanes = [Lane(settings, t, clients=clients, worker_id=options.worker_id,
                           prefetch=prefetch, static_member=options.static_member,
                           pool=options.pool, clock=clock,
                           claim_ahead_ms=round(options.claim_ahead_s * 1000),
                           launch_ahead_ms=round(options.launch_ahead_s * 1000),
                           in_burst=self._holds_a_burst,
                           deserialize=deserialize, before_commit=self._flush_events,
                           before_revoke=self._await_runs, keyed=keyed,
                           schedule=CommitSchedule(options.commit_interval_s,
                                                   options.commit_max_outcomes))
                      for t in self.job_types]  # fmt: skip
        self._finished: queue.SimpleQueue[Finished] = queue.SimpleQueue()
        self.executor = (executor or self._new_executor)(self._finished.put)
        self.together = Together()
        """The lanes' claims and commits, waited for together (pipeline/worker/together.py)."""
        self.engine = WorkerEngine(
            app, self.lanes, options, serialize=self.serialize,
            encode_started=StartedEncoder(self.serialize, event_schemas()),
            results_topic=self.topics.results, processes=options.isolation == "process",
            max_log_lines=settings.max_log_lines, max_log_bytes=settings.max_log_bytes,
            monotonic=self.clock.monotonic,
        )  # fmt: skip
        self.inflight, self.stats = self.engine.inflight, self.engine.stats
        self.control = clients.control(deserialize)
        self.identity = WorkerIdentity(options.worker_id, self.job_types, options.concurrency,
                                       clock.wall_ms(), pool=options.pool)  # fmt: skip
        self.state = STARTING
        self._next_health = 0.0
        self.health = LoopHealth("worker", options.stats_interval_s, self._counters)
        for lane in self.lanes:
            self.health.refresh(ConsumerLag(partial(_consumer_of, lane), lane.group))

    def _new_executor(self, on_finish: Callable[[Finished], None]) -> Executor:
        limit = self.settings.max_result_bytes
        if self.options.isolation == "process":
            return ProcessExecutor.for_app(self.app, self.options.concurrency, on_finish,
                                           max_result_bytes=limit)  # fmt: skip
        return JobExecutor(self.options.concurrency, on_finish, max_result_bytes=limit)

    # -- lifecycle ----------------------------------------------------------------------

    def run(self, stop: threading.Event, abandon: threading.Event | None = None) -> None:
        """Serve until ``stop``, drain, and close; ``abandon`` cuts the drain short."""
        try:
            create_missing_topics(self.settings, self.lanes, self.options.pool)
            self.start()
            log.info("worker started", extra={
                "worker_id": self.options.worker_id, "job_types": self.job_types,
                "concurrency": self.options.concurrency,
                "claim_ahead_s": self.options.claim_ahead_s,
                "claimed_ahead_most": self.options.claimed_ahead_most})  # fmt: skip
            while not stop.is_set():
                self.step(fetching=True)
                self.health.beat()
            self.drain(abandon or threading.Event())
        finally:
            self.close()

    def start(self) -> None:
        """Announce the worker (STARTING), join the groups and read the cancels in force,
        before any record starts."""
        self._beat_worker(force=True)
        for lane in self.lanes:
            lane.start()
        wall = self.clock.wall_ms()
        self.engine.follow(self.control.start(wall), wall)
        self.state = RUNNING
        self._beat_worker(force=True)

    def drain(self, abandon: threading.Event) -> None:
        self.state = DRAINING
        self._beat_worker(force=True)
        deadline = self.clock.monotonic() + self.options.drain_timeout_s
        while (self.inflight.active and self.clock.monotonic() < deadline
               and not abandon.is_set()):  # fmt: skip
            self.step(fetching=False)
        self.step(fetching=False)
        for lane in self.lanes:
            lane.commit(force=True)

    def _await_runs(self, lane: Lane) -> None:
        """Before the partitions of a limited lane, or of one holding runs with a
        concurrency key, are revoked: let those runs end and report them (the lane commits
        their outcomes next, and claims what waits), at most ``revoke_timeout_s``. No
        record is fetched or started meanwhile; the other lanes' runs are collected too,
        every run keeps its heartbeats and the worker its own."""
        deadline = self.clock.monotonic() + self.options.revoke_timeout_s
        while (lane.slots.in_use or lane.key_runs) and self.clock.monotonic() < deadline:
            self._apply(self.engine.claim())
            self.collect(wait_s=self.options.poll_timeout_s)
            self._apply(self.engine.supervise(self.clock.monotonic(), self.clock.wall_ms()))
            self._beat_worker()
            self.events.poll(0)
            self.health.beat()  # the loop is waiting on purpose: /healthz stays up
        if lane.slots.in_use or lane.key_runs:
            log.warning("runs still going when their partitions were revoked: given up, "
                        "their next owner may run beside them", extra={
                            "job_type": lane.job_type,
                            "runs": max(lane.slots.in_use, lane.key_runs)})  # fmt: skip

    def close(self) -> None:
        self._apply(self.engine.give_up(self.clock.monotonic(), self.clock.wall_ms()))
        for lane in self.lanes:
            lane.commit(force=True)
            lane.close()
        self.control.close()
        self.state = STOPPED
        self._beat_worker(force=True)
        self.executor.close()
        self.together.close()
        self.events.flush(10)
        log.info("worker stopped", extra={"worker_id": self.options.worker_id, **self._counters()})

    # -- one iteration ------------------------------------------------------------------

    def step(self, *, fetching: bool) -> None:
        self._fetch(fetching)
        self.collect()
        now, wall = self.clock.monotonic(), self.clock.wall_ms()
        self._apply(self.engine.tick(self.control.poll(), now, wall, fetching=fetching))
        self.together.each([lane for lane in self.lanes if lane.commit_due()], Lane.commit)
        for lane in self.lanes:
            lane.update_pauses(fetching)
        self._beat_worker()
        self.events.poll(0)
        self._update_stats()

    def _fetch(self, fetching: bool) -> None:
        """Fetch, waiting (at most ``poll_timeout_s``) for whatever can happen next: a run
        to end, or records to arrive (:meth:`WorkerEngine.waits`)."""
        for_end, wait = self.engine.waits(fetching, self.clock.wall_ms())
        if for_end:
            self.collect(wait_s=wait)
            wait = 0
        elif not self._finished.empty():
            wait = 0
        for lane in self.lanes:
            lane.fetch(wait / len(self.lanes))

    def collect(self, wait_s: float = 0) -> None:
        """Report the runs that ended; wait up to ``wait_s`` for one if none has."""
        ends = []
        try:
            ends.append(self._finished.get(timeout=wait_s) if wait_s else
                        self._finished.get_nowait())  # fmt: skip
            while True:
                ends.append(self._finished.get_nowait())
        except queue.Empty:
            pass
        if ends:
            self._apply(self.engine.ended(ends, self.clock.monotonic(), self.clock.wall_ms()))

    def _apply(self, actions: Iterable[Action]) -> None:
        """Carry out the engine's actions, in order."""
        for action in actions:
            match action:
                case Emit(key, event, lease):
                    self._emit(key, event, lease)
                case Claim(lanes):
                    self.together.each(lanes, _claim)
                    self._apply(self.engine.claimed(self.clock.monotonic(),
                                                    self.clock.wall_ms()))  # fmt: skip
                case Launch(job, ctx):
                    job.async_run = self.executor.submit(job.token, job.handler, ctx, job.log,
                                                         job.launched)  # fmt: skip
                case Stop(job):
                    if job.signal is not None:
                        job.signal.set()
                    if job.async_run is not None and not job.async_run.cancel_requested:
                        job.async_run.cancel()
                    if isinstance(self.executor, ProcessExecutor):
                        self.executor.cancel(job.token, self.options.cancel_grace_s)
                case Expire(job):
                    if job.async_run is not None:
                        job.async_run.cancel(timed_out=True)
                case Kill(token):
                    if isinstance(self.executor, ProcessExecutor):
                        self.executor.kill(token)

    # -- plain records ------------------------------------------------------------------

    def _emit(self, key: bytes, event: Event, lease: RunLease | None = None) -> None:
        """A plain record on jobs.events; a HEARTBEAT confirms its run's ``lease`` once the
        brokers have it, from when it was sent."""
        on_delivery: Callable[[KafkaError | None, object], None] = _on_delivery
        if lease is not None:
            on_delivery = partial(_confirming, lease, self.clock.monotonic())
        self.events.produce(self.topics.events, self.serialize(event), key,
                            on_delivery=on_delivery)  # fmt: skip

    def _flush_events(self) -> None:
        """Every HEARTBEAT lands on jobs.events before the outcome that follows it."""
        if len(self.events) and self.events.flush(10) > 0:
            log.warning("HEARTBEAT records still undelivered after 10 s")

    def _beat_worker(self, *, force: bool = False) -> None:
        now = self.clock.monotonic()
        if not force and now < self._next_health:
            return
        self._next_health = now + self.options.worker_heartbeat_s
        record = self.identity.record(self.state, self.inflight.active, self.clock.wall_ms())
        self.events.produce(self.topics.workers, self.serialize(record),
                            self.options.worker_id.encode(), on_delivery=_on_delivery)  # fmt: skip
        for job_type in self.job_types:
            metrics.WORKER_HEARTBEAT.labels(job_type).set(self.clock.wall_ms() / 1000)

    def _counters(self) -> dict[str, object]:
        """The stats line: the runs, and the lanes' transactions summed over the job types."""
        lanes: Counter[str] = Counter()
        for lane in self.lanes:
            lanes.update(lane.counters())
        return {**self.stats.snapshot(), **lanes}

    def _holds_a_burst(self) -> bool:
        """Whether the worker holds as many records and runs claimed before their instant
        as make a burst: then each lane claims what it holds as it arrives
        (options.BURST_HELD). The runs claimed count, so that a burst claimed as it came
        goes on being claimed so to its last record."""
        held = len(self.inflight.ahead) + sum(lane.held_early for lane in self.lanes)
        return held >= self.options.claim_on_arrival_above

    def _update_stats(self) -> None:
        self.stats.running = len(self.inflight.slots)
        buffered: Counter[str] = Counter()
        for lane in self.lanes:
            buffered.update(lane.buffered())
        self.stats.buffered = dict(buffered)


def _on_delivery(err: object, message: object) -> None:
    if err is not None:
        log.warning("worker event not delivered: %s", err)


def _confirming(lease: RunLease, sent_at: float, err: KafkaError | None, message: object) -> None:
    """A HEARTBEAT's delivery report: delivered, it confirms its run's lease from its send."""
    if err is None:
        lease.confirm(sent_at)
    else:
        _on_delivery(err, message)


def _consumer_of(lane: Lane) -> Consumer:
    return lane.consumer


def _claim(lane: Lane) -> None:
    lane.tx.claim()
