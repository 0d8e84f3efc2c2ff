"""``jobstream worker``: consume executions, run their handlers, report outcomes.

One thread owns every Kafka client (confluent-kafka's consumer is not thread-safe) and
loops: fetch into the tier buffers of each job type's :class:`Lane`; collect the runs
that ended; time out the late ones; heartbeat the running ones; start buffered
executions while there is capacity, claimed (their STARTED and offsets committed) before
their handlers run; commit each lane's outcomes in a transaction once its commit is due
(every ``commit_interval_s`` under load, with the next claim, at once for an outcome of a
workflow's job: see pipeline/runtime/schedule.py); pause what is full.
Handlers run on :class:`JobExecutor`'s threads and event loop and hand their ends back
through a queue. Each iteration waits (at most ``poll_timeout_s``) only for what could let
it do something: a run to end when every slot is taken, records to arrive when a slot is
free and nothing is buffered.

- Capacity: at most ``concurrency`` runs hold a slot, counting a timed-out sync handler
  whose thread has not returned yet (it cannot be killed; see executor.py). With
  ``isolation="process"`` the run's child process is killed instead, and the slot
  comes back once a new child has replaced it (processes.py).
- Every start counts: a record is claimed before its handler runs, its STARTED and its
  offset committed in one transaction of its lane, so no run goes unrecorded and Kafka
  never hands a started record out again, to this process restarted or to any other. A
  claim that fails leaves neither (the runs wait, and it is tried again after the lane's
  backoff). A run whose process dies is ended by the status processor when its lease
  passes (LOST) and retried as the job's next attempt; a handler that kills its process
  spends its attempts and reaches the dead-letter topic instead of looping on restarts.
  The retry of a run whose process died runs alone (pipeline/worker/quarantine.py),
  unless handlers run in child processes, where a crash takes only its own run down.
- HEARTBEAT goes through a plain idempotent producer, flushed before each transaction
  with outcomes; the final outcome waits for a transaction, and with it the run's log
  lines (at most ``JOBSTREAM_MAX_LOG_LINES`` and ``_BYTES``) go to jobs.logs
  (pipeline/worker/runlogs.py).
- Progress (``ctx.progress``): a run's latest report rides on its next HEARTBEAT, sent as
  soon as the previous report is ``progress_interval_s`` old, and its last report goes
  before its outcome (pipeline/worker/progress.py).
- On the instant: a record fired ahead of its due instant (``JOBSTREAM_FIRE_LEAD``)
  waits in its lane until ``claim_ahead_s`` before it (the loop's waits end then), and is
  claimed (its STARTED telling the due instant) with the others due within as much again,
  in one transaction, holding no slot: up to ``claimed_ahead_most`` such runs wait for
  their launch. ``launch_ahead_s`` before its instant, a run takes a slot (claimed runs
  before any record waiting in a buffer) and goes to the executor, which starts the
  handler on the instant (pipeline/worker/executor.py). A cancel that arrives before the
  claim ends it CANCELLED, never started; one after the claim and before the launch, at
  once, never launched; one after the launch, like any cancel of a run.
- Beyond the slots: with every slot taken, a type whose runs are shorter than its
  claims' round trip has as many more due records claimed as its slots run in one round
  trip, launched as runs end (:meth:`_claim_beyond_slots`), so that its slots do not
  idle while each claim commits.
- Redeliveries (a rebalance racing a claim): a record whose execution id is running here
  joins that run; one whose outcome was already produced here is skipped.
- Overlap: a cron execution with ``overlap=SKIP`` while a run of the same job runs here is
  not started but reported SUCCEEDED, result null, detail "skipped: previous run still
  running", so it is not retried. Runs of a job share a partition key, hence a worker;
  only across a rebalance may two workers overlap.
- Concurrency limits: a type with a fleet-wide limit starts a run only on a free slot of
  its record's partition index, and before its partitions are revoked the loop lets its
  runs end and reports them (:meth:`_await_runs`), so the next owner of an index starts
  nothing while a run of it goes on here (docs/adr/0003-concurrency-limits.md).
- Cancels (pipeline/worker/cancels.py, control.py): the loop follows jobs.control, read
  from its retention's start before the first run. A record of a cancelled job is not
  started but reported CANCELLED; a run of one is stopped (an async handler cancelled, a
  sync handler's ``ctx.cancelled`` set) and reported CANCELLED when it returns, or after
  ``cancel_grace_s`` if it ignores the cancel (its slot stays taken until it returns).
- Shutdown (``stop`` set, e.g. by SIGTERM): DRAINING, fetch nothing more, wait up to
  ``drain_timeout_s`` for running jobs and commit their outcomes without waiting for the
  commit interval. Jobs still running then are given up: each is reported FAILED
  (``WorkerStopped``, retryable), so its retry runs elsewhere without waiting for a lease.
"""

from __future__ import annotations

import heapq
import logging
import math
import queue
import threading
import time
from collections import Counter
from functools import partial
from itertools import count

from confluent_kafka import Consumer
from confluent_kafka.admin import TopicMetadata

from pipeline import metrics
from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.errors import ConfigurationError, ValidationError
from pipeline.kafka import clients
from pipeline.kafka.admin import ensure_topics
from pipeline.model.cancel import CancelRequest
from pipeline.model.lifecycle import WORKER_STOPPED
from pipeline.model.records import ExecutionRequested, evolve
from pipeline.runtime.health import LoopHealth
from pipeline.runtime.lag import ConsumerLag
from pipeline.runtime.observed import observe
from pipeline.runtime.schedule import CommitSchedule
from pipeline.scheduling.cron import OverlapPolicy
from pipeline.serde import Event, event_schemas, make_serde
from pipeline.topics import Topics
from pipeline.worker import outcomes
from pipeline.worker.app import WorkerApp
from pipeline.worker.cancels import CancelSet
from pipeline.worker.capture import RunLog
from pipeline.worker.context import JobContext, build_context
from pipeline.worker.control import ControlReader
from pipeline.worker.executor import Finished, JobExecutor
from pipeline.worker.heartbeat import DRAINING, RUNNING, STARTING, STOPPED, WorkerIdentity
from pipeline.worker.inflight import InFlight, RunningJob
from pipeline.worker.lane import Lane, Record, moving_mean
from pipeline.worker.offsets import OffsetRef
from pipeline.worker.options import MIN_PREFETCH, WorkerOptions, WorkerStats
from pipeline.worker.processes import ProcessExecutor
from pipeline.worker.progress import ProgressReport, ProgressReporter
from pipeline.worker.quarantine import Quarantine, is_suspect
from pipeline.worker.results import result_headers
from pipeline.worker.runlogs import logs_record
from pipeline.worker.started import StartedEncoder

log = logging.getLogger(__name__)


class WorkerLoop:
    def __init__(self, settings: Settings, app: WorkerApp,
                 options: WorkerOptions | None = None) -> None:  # fmt: skip
        self.settings, self.app = settings, app
        self.options = options = options or WorkerOptions()
        self.job_types = options.job_types or app.job_types
        if not self.job_types:
            raise ConfigurationError("the worker app registers no handler")
        for job_type in self.job_types:
            app.get(job_type)  # raises ConfigurationError naming a type with no handler
        if options.concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {options.concurrency}")
        self.topics = Topics(settings)
        self.serialize, deserialize = make_serde(settings.schema_registry_url)
        self.encode_started = StartedEncoder(self.serialize, event_schemas())
        prefetch = options.prefetch or max(options.concurrency, MIN_PREFETCH)
        # Delivery reports only for failures: _on_delivery only logs those, and a report
        # per record is a Python callback each. A linger of 50 ms, not 5, puts ten times
        # as many HEARTBEAT records in a request.
        self.events = clients.producer(
            settings, client_id=f"jobstream.worker.{options.worker_id}",
            **{"delivery.report.only.error": True, "linger.ms": 50},
        )
        self.lanes = [Lane(settings, t, worker_id=options.worker_id, prefetch=prefetch,
                           static_member=options.static_member, pool=options.pool,
                           claim_ahead_ms=round(options.claim_ahead_s * 1000),
                           launch_ahead_ms=round(options.launch_ahead_s * 1000),
                           deserialize=deserialize, before_commit=self._flush_events,
                           before_revoke=self._await_runs,
                           schedule=CommitSchedule(options.commit_interval_s,
                                                   options.commit_max_outcomes))
                      for t in self.job_types]  # fmt: skip
        self._finished: queue.SimpleQueue[Finished] = queue.SimpleQueue()
        self.executor: JobExecutor | ProcessExecutor
        if options.isolation == "process":
            self.executor = ProcessExecutor.for_app(
                app, options.concurrency, self._finished.put,
                max_result_bytes=settings.max_result_bytes)  # fmt: skip
        elif options.isolation == "thread":
            self.executor = JobExecutor(options.concurrency, self._finished.put,
                                       max_result_bytes=settings.max_result_bytes)  # fmt: skip
        else:
            raise ConfigurationError(f"isolation: 'thread' or 'process', not {options.isolation!r}")
        self.inflight = InFlight()
        self.quarantine: Quarantine[tuple[Lane, Record]] = Quarantine()
        self._quarantines = options.isolation == "thread"
        """A crash in a child process takes only its own run down: no suspects there."""
        self._unclaimed: list[tuple[RunningJob, JobContext]] = []
        """Runs started whose claim has not committed yet: their handlers wait."""
        self._claimed_ahead: list[tuple[int, int, RunningJob, JobContext]] = []
        """Runs claimed ahead of their instant, waiting for their launch: a heap by due
        instant (then token)."""
        self._launch_ahead_ms = round(options.launch_ahead_s * 1000)
        self.cancels = CancelSet()
        self.control = ControlReader(settings, deserialize)
        self._cancelling: list[RunningJob] = []
        """Runs stopped by a cancel whose outcome is still to come."""
        self._tokens = count(1)
        self._rotation = 0
        self.identity = WorkerIdentity(options.worker_id, self.job_types, options.concurrency,
                                       now_ms(), pool=options.pool)  # fmt: skip
        self.state = STARTING
        self.stats = WorkerStats()
        self._next_health = 0.0
        self.health = LoopHealth("worker", self.options.stats_interval_s, self._counters)
        for lane in self.lanes:
            self.health.refresh(ConsumerLag(partial(_consumer_of, lane), lane.group))

    # -- lifecycle ----------------------------------------------------------------------

    def run(self, stop: threading.Event, abandon: threading.Event | None = None) -> None:
        """Serve until ``stop``, drain, and close; ``abandon`` cuts the drain short."""
        try:
            self._beat_worker(force=True)
            self._create_missing_topics()
            for lane in self.lanes:
                lane.start()
            self._follow_cancels()
            self.state = RUNNING
            self._beat_worker(force=True)
            log.info("worker started", extra={
                "worker_id": self.options.worker_id, "job_types": self.job_types,
                "concurrency": self.options.concurrency,
                "claim_ahead_s": self.options.claim_ahead_s,
                "claimed_ahead_most": self.options.claimed_ahead_most})  # fmt: skip
            while not stop.is_set():
                self.step(fetching=True)
                self.health.beat()
            self._drain(abandon or threading.Event())
        finally:
            self._close()

    def _create_missing_topics(self) -> None:
        """A type served before any job of it fired gets its topics now, so the consumer
        sees them at once instead of after the next metadata refresh. Existing topics are
        left alone: their partition count is no business of a worker."""
        present = self.lanes[0].consumer.list_topics(timeout=30).topics
        for needed, what in ((self.topics.results, "results"), (self.topics.logs, "run logs")):
            if needed not in present:  # made by `topics create`, not by workers
                raise ConfigurationError(f"topic {needed} not found: {what} go there; run "
                                         "`jobstream topics create`")
        missing = [spec for t in self.job_types
                   for spec in self.topics.job_type_specs(t, self.options.pool)
                   if spec.name not in present]  # fmt: skip
        if missing:
            ensure_topics(self.settings.kafka_config, missing,
                          replication_factor=self.settings.replication_factor)  # fmt: skip
        self._check_limited_partitions(present)

    def _check_limited_partitions(self, present: dict[str, TopicMetadata]) -> None:
        """A limited type's slots are split over ``JOBSTREAM_EXEC_PARTITIONS`` indices, by
        the timers as by the workers: its topics must have that many partitions."""
        wanted = self.settings.exec_partitions
        for lane in self.lanes:
            if not lane.slots.limited:
                continue
            for topic in lane.tier_of:
                found = len(present[topic].partitions) if topic in present else wanted
                if found != wanted:
                    raise ConfigurationError(
                        f"{topic} has {found} partitions, but {lane.job_type} has a "
                        f"concurrency limit split over JOBSTREAM_EXEC_PARTITIONS={wanted}: "
                        "give the setting the topic's count (timers and workers alike)"
                    )

    def _drain(self, abandon: threading.Event) -> None:
        self.state = DRAINING
        self._beat_worker(force=True)
        deadline = time.monotonic() + self.options.drain_timeout_s
        while self.inflight.active and time.monotonic() < deadline and not abandon.is_set():
            self.step(fetching=False)
        self.step(fetching=False)
        for lane in self.lanes:
            lane.commit(force=True)

    def _await_runs(self, lane: Lane) -> None:
        """Before a limited lane's partitions are revoked: let its runs end and report
        them (the lane commits their outcomes next, and claims what waits), at most
        ``revoke_timeout_s``. No record is fetched or started meanwhile; the other
        lanes' runs are collected too, every run keeps its heartbeats and the worker its
        own."""
        deadline = time.monotonic() + self.options.revoke_timeout_s
        while lane.slots.in_use and time.monotonic() < deadline:
            self._launch_claimed()
            self._collect(wait_s=self.options.poll_timeout_s)
            now = time.monotonic()
            self._time_out(now)
            self._beat_jobs(now)
            self._beat_worker()
            self.events.poll(0)
            self.health.beat()  # the loop is waiting on purpose: /healthz stays up
        if lane.slots.in_use:
            log.warning("runs still going when their partitions were revoked: given up, "
                        "their next owner may run beside them", extra={
                            "job_type": lane.job_type, "runs": lane.slots.in_use})  # fmt: skip

    def _close(self) -> None:
        self._unclaimed.clear()
        self._claimed_ahead.clear()
        given_up = self.inflight.give_up()
        self.stats.given_up = len(given_up)
        if given_up:
            log.warning("giving up running jobs", extra={
                "executions": sorted(job.execution_id for job in given_up)})  # fmt: skip
        error = outcomes.ErrorDescription(
            WORKER_STOPPED, f"the worker stopped before the run ended (drain of "
            f"{self.options.drain_timeout_s:g} s)", None, True)  # fmt: skip
        for job in given_up:
            self._last_progress(job)
            event = (self._cancelled(job.execution, job.cancel) if job.cancel is not None else
                     outcomes.failed(job.execution, error, worker_id=self.options.worker_id,
                                     now_ms=now_ms()))  # fmt: skip
            self._queue_outcome(job.lane, self._with_logs(job, event), job.execution)
        for lane in self.lanes:
            lane.commit(force=True)
            lane.close()
        self.control.close()
        self.state = STOPPED
        self._beat_worker(force=True)
        self.executor.close()
        self.events.flush(10)
        log.info("worker stopped", extra={"worker_id": self.options.worker_id, **self._counters()})

    # -- one iteration ------------------------------------------------------------------

    def step(self, *, fetching: bool) -> None:
        self._fetch(fetching)
        self._collect()
        now = time.monotonic()
        self._cancel_requested(now)
        self._time_out(now)
        self._beat_jobs(now)
        self._launch_ahead()
        if fetching:
            self._dispatch()
            self._claim_beyond_slots()
            self._dispatch_ahead()
        self._launch_claimed()
        for lane in self.lanes:
            lane.commit()
            lane.update_pauses(fetching)
        self._beat_worker()
        self.events.poll(0)
        self._update_stats()

    def _fetch(self, fetching: bool) -> None:
        """Fetch, waiting (at most ``poll_timeout_s``) for whatever can happen next.

        With every slot taken (or while draining) no record could start, so the wait is
        for a run to end; so it is when the only records buffered wait for a slot of
        their type's concurrency limit (a record of another type arriving meanwhile waits
        for the next iteration, at most ``poll_timeout_s``); with a free slot and nothing
        buffered, the wait is for records to arrive; with both, there is no wait at all.
        """
        wait = self._until_next_instant(self.options.poll_timeout_s)
        ready = any(lane.has_buffered for lane in self.lanes) or self._may_claim_ahead()
        for_slot = not ready and any(lane.waits_for_slot for lane in self.lanes)
        full = not self._slot_free()
        if not fetching or for_slot or full or self.quarantine.blocks(self.inflight.active):
            self._collect(wait_s=wait)
            wait = 0
        elif not self._finished.empty() or ready:
            wait = 0
        for lane in self.lanes:
            lane.fetch(wait / len(self.lanes))

    def _slot_free(self) -> bool:
        return len(self.inflight.slots) < self.options.concurrency

    def _until_next_instant(self, wait_s: float) -> float:
        """``wait_s``, or less if a record held before its time is due to be claimed
        sooner, or a run claimed ahead to take a free slot."""
        soonest = min((ms for lane in self.lanes if (ms := lane.early.next_ms()) is not None),
                      default=None)  # fmt: skip
        if self._claimed_ahead and self._slot_free():
            launch = self._claimed_ahead[0][0] - self._launch_ahead_ms  # else: a run's end
            soonest = launch if soonest is None else min(soonest, launch)
        if soonest is None:
            return wait_s
        return min(wait_s, max(0.0, (soonest - now_ms()) / 1000))

    def _collect(self, wait_s: float = 0) -> None:
        """Report the runs that ended; wait up to ``wait_s`` for one if none has."""
        try:
            end = self._finished.get(timeout=wait_s) if wait_s else self._finished.get_nowait()
            while True:
                self._end(end)
                end = self._finished.get_nowait()
        except queue.Empty:
            return

    def _end(self, end: Finished) -> None:
        """A run returned (or was cancelled): free its slot and report its outcome."""
        job = self.inflight.release(end.token)
        if job is not None:
            self._ran(job)
        if job is None or job.reported:
            return  # a timed-out run whose thread returned: only its slot mattered
        if job.cancel is not None:  # stopped by a cancel: CANCELLED, however it returned
            event: Event | None = self._cancelled(job.execution, job.cancel)
        else:
            event = end.outcome(job.execution, timeout_s=job.timeout_s,
                                worker_id=self.options.worker_id,
                                results_topic=self.topics.results)  # fmt: skip
            if end.result is not None and end.result.kept:  # joins the SUCCEEDED's transaction
                execution = job.execution
                job.lane.add_result(execution.job_id.encode(), end.result.body,
                                    result_headers(end.result, execution.execution_id,
                                                   execution.attempt))  # fmt: skip
        if event is not None:  # None: cancelled when given up at the stop
            self._report(job, event)

    def _time_out(self, now: float) -> None:
        """Cancel async runs at their deadline (they end TIMED_OUT); report sync runs, and
        async ones that ignore their cancellation for ``async_grace_s``, TIMED_OUT here.
        A run in a child process (``isolation="process"``) is reported so too, and its
        child killed: the slot comes back with the child that replaces it."""
        for job in self.inflight.overdue(now):
            run = job.async_run
            if run is not None and not run.cancel_requested:
                run.cancel(timed_out=True)
            if run is None or now >= job.deadline + self.options.async_grace_s:
                if isinstance(self.executor, ProcessExecutor):
                    self.executor.kill(job.token)
                self._report(job, self._cancelled(job.execution, job.cancel)
                             if job.cancel is not None else
                             outcomes.timed_out(job.execution, job.timeout_s,
                                                worker_id=self.options.worker_id,
                                                now_ms=now_ms()))  # fmt: skip

    def _beat_jobs(self, now: float) -> None:
        """A HEARTBEAT per run every ``heartbeat_s``, or sooner carrying the progress its
        handler reported (at most one per ``progress_interval_s``)."""
        for job in self.inflight.seated():
            report = job.progress.due(now)
            if report is not None:
                self._beat(job, now, report)
        for job in self.inflight.beats_due(now):
            self._beat(job, now, None)

    def _beat(self, job: RunningJob, now: float, report: ProgressReport | None) -> None:
        """Send the run's HEARTBEAT (with ``report``, if any) and file its next one."""
        self.inflight.beat_at(job, now + self.options.heartbeat_s)
        self._emit(outcomes.heartbeat(job.execution, worker_id=self.options.worker_id,
                                      now_ms=now_ms(), progress=report), job.execution)  # fmt: skip

    def _last_progress(self, job: RunningJob) -> None:
        """The run's report still waiting, if any, on a HEARTBEAT before its outcome (the
        lane flushes HEARTBEATs before its transaction)."""
        report = job.progress.last(time.monotonic())
        if report is not None:
            self._emit(outcomes.heartbeat(job.execution, worker_id=self.options.worker_id,
                                          now_ms=now_ms(), progress=report),
                       job.execution)  # fmt: skip

    def _report(self, job: RunningJob, event: Event) -> None:
        """Queue a run's final outcome for its lane's next transaction."""
        self._last_progress(job)
        self.stats.count(event.data.kind.lower())
        observe(event.data)
        self.inflight.reported(job)
        self._queue_outcome(job.lane, self._with_logs(job, event), job.execution)

    def _with_logs(self, job: RunningJob, event: Event) -> Event:
        """A launched run's outcome telling how many lines it kept; its lines, if any, go
        to jobs.logs in the transaction of its outcome."""
        lines, job.log = job.log, None
        if lines is None:
            return event
        record, kept = logs_record(lines, job.execution)
        if record is not None:
            job.lane.add_log(*record)
        return Event(event.name, evolve(event.data, log_lines=kept))

    def _settle(self, lane: Lane, ref: OffsetRef, event: Event | None,
                execution: ExecutionRequested) -> None:  # fmt: skip
        """A record finished without a run: its offset is done, and ``event``, if any, goes
        in with it."""
        if event is not None:
            self._queue_outcome(lane, event, execution)
        lane.tracker.done(ref)

    def _queue_outcome(self, lane: Lane, event: Event, execution: ExecutionRequested) -> None:
        """An outcome for the lane's next transaction."""
        lane.pending.append((outcomes.event_key(execution), self.serialize(event)))
        self.inflight.remember(execution.execution_id)
        if execution.workflow_id:
            lane.schedule.hurry()  # the workflow's next steps may wait on this outcome

    # -- starting runs ------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Start what fits: each start's STARTED joins its lane's next transaction, which
        :meth:`_launch_claimed` commits before the handlers run."""
        running = self.inflight.active
        while self._slot_free() and not self.quarantine.blocks(running):
            picked = self.quarantine.take_held(running) or self._next_record()
            if picked is None:
                break
            lane, record = picked
            if not lane.holds(record.ref):
                continue  # held back while its partition went to another worker
            suspect = self._quarantines and is_suspect(record.execution)
            if suspect and running:
                self.quarantine.hold(picked)
                break
            launch = self._start(lane, record)
            if launch is not None:
                self._unclaimed.append(launch)
                if suspect:
                    self.quarantine.alone = launch[0].execution_id

    def _launch_claimed(self) -> None:
        """Claim the runs started (their STARTED and offsets in one transaction per lane),
        then run the handlers of those whose STARTED has left with a committed transaction
        (this one, or a revocation's). A run whose STARTED is still waiting waits with it,
        for the lane's next try; unless its partition was revoked or lost meanwhile: then
        it is dropped with its STARTED, and the partition's next owner runs its record."""
        if not self._unclaimed:
            return
        for lane in dict.fromkeys(job.lane for job, _ in self._unclaimed):
            lane.claim()
        waiting, now, wall = [], time.monotonic(), now_ms()
        for job, ctx in self._unclaimed:
            if job.lane.holds_pending(job.started):
                if job.lane.holds(job.ref):
                    waiting.append((job, ctx))
                else:
                    job.lane.drop_pending(job.started)
                    self._forget(job)
                continue
            if job.cancel is not None:  # cancelled while its claim waited: never launched
                if not job.reported:
                    self._report(job, self._cancelled(job.execution, job.cancel))
                self.inflight.release(job.token)
                continue
            if job.token in self.inflight.ahead:  # its launch is still to come
                self.inflight.beat_at(job, now + self.options.heartbeat_s)
                heapq.heappush(self._claimed_ahead,
                               (job.execution.scheduled_at_ms, job.token, job, ctx))  # fmt: skip
                continue
            self._launch(job, ctx, now, wall)
        self._unclaimed = waiting

    def _launch(self, job: RunningJob, ctx: JobContext, now: float, wall: int) -> None:
        """Hand a claimed run holding a slot to the executor; one claimed ahead starts on
        its instant, and its deadline and heartbeats count from there."""
        start = now + max(0, job.execution.scheduled_at_ms - wall) / 1000
        job.deadline = start + job.timeout_s
        self.inflight.beat_at(job, start + self.options.heartbeat_s)
        job.log = RunLog(self.settings.max_log_lines, self.settings.max_log_bytes)
        job.async_run = self.executor.submit(job.token, job.handler, ctx, job.log)

    def _launch_ahead(self) -> None:
        """The runs claimed ahead whose launch has come take the free slots, earliest
        instant first; those that ended meanwhile (cancelled) are passed over."""
        heap, now, wall = self._claimed_ahead, time.monotonic(), now_ms()
        launch_by = wall + self._launch_ahead_ms
        while heap and heap[0][0] <= launch_by and self._slot_free():
            _, _, job, ctx = heapq.heappop(heap)
            if job.token in self.inflight.ahead:
                self.inflight.seat(job)
                self._launch(job, ctx, now, wall)

    def _ran(self, job: RunningJob) -> None:
        """Count a launched run's time in its lane's moving mean."""
        if math.isinf(job.deadline):
            return  # never launched
        took = time.monotonic() - (job.deadline - job.timeout_s)  # the deadline counts from launch
        job.lane.run_s = moving_mean(job.lane.run_s, took)

    def _claim_beyond_slots(self) -> None:
        """With every slot taken, claim due records of a type whose runs are shorter than
        its claims' round trip beyond the slots: as many as its slots run in one round
        trip (at most ``claimed_ahead_most`` waiting), each launched as a run ends, before
        any record in a buffer, as runs claimed ahead are.

        A worker starts claimed runs only, and a claim waits a round trip to the broker:
        claims for the free slots alone bound a type of short runs to ``concurrency`` runs
        a round trip, its slots idle while each claim commits (on three replicating
        brokers, six or seven claims a second, docs/benchmarks.md). STARTED tells the
        claim, as it does for a run claimed on a free slot, and the launch comes within
        about a round trip of it. A type with a concurrency limit is never claimed so (its
        claims hold the limit's slots), and none while a suspect waits or runs alone; a
        suspect met here goes back to its buffer, for a slot."""
        if self._slot_free() or self.quarantine.blocks(self.inflight.active):
            return
        for lane in self.lanes:
            run_s, claim_s = lane.run_s, lane.commit_s
            if lane.slots.limited or run_s is None or claim_s is None or run_s >= claim_s:
                continue
            in_a_claim = math.ceil(self.options.concurrency * claim_s / max(run_s, 1e-6))
            room = min(self.options.claimed_ahead_most, in_a_claim) - len(self.inflight.ahead)
            while room > 0 and (record := lane.pick()) is not None:
                if not lane.holds(record.ref):
                    continue  # its partition went to another worker
                if self._quarantines and is_suspect(record.execution):
                    lane.wait_for_slot(record)
                    break
                launch = self._start(lane, record, ahead=True)
                if launch is not None:
                    self._unclaimed.append(launch)
                    room -= 1

    def _may_claim_ahead(self) -> bool:
        """Whether records wait to be claimed ahead and there is room for them."""
        return (len(self.inflight.ahead) < self.options.claimed_ahead_most
                and any(lane.ahead for lane in self.lanes))  # fmt: skip

    def _dispatch_ahead(self) -> None:
        """Start the records whose claim has come ahead of their instant, holding no slot
        (their STARTED joins the lane's next transaction, as a slot's do), up to
        ``claimed_ahead_most`` waiting. A record the quarantine would hold waits for a slot
        in its tier buffer instead; and none is claimed while a suspect waits or runs
        alone, or it would be launched beside the suspect.

        A worker behind (a run it claimed ahead waits past its instant for a slot) claims
        nothing more ahead: runs claimed and not launched would only be more runs lost
        with it should it die, each then retried as a suspect. Meanwhile the records whose
        launch has come wait for a slot in their tier buffers, as records not fired ahead
        do."""
        if self.quarantine.blocks(self.inflight.active):
            return  # a suspect waits for the runs in hand, or runs alone: none claimed now
        wall = now_ms()
        if self._claimed_ahead and self._claimed_ahead[0][0] < wall:
            for lane in self.lanes:
                for _, record in lane.ahead.due(wall + self._launch_ahead_ms):
                    lane.wait_for_slot(record)
            return
        room = self.options.claimed_ahead_most - len(self.inflight.ahead)
        for lane in self.lanes:
            while room > 0 and lane.ahead:
                _, record = lane.ahead.pop()
                if not lane.holds(record.ref):
                    continue  # its partition went to another worker
                if self._quarantines and is_suspect(record.execution):
                    lane.wait_for_slot(record)
                    continue
                launch = self._start(lane, record, ahead=True)
                if launch is not None:
                    self._unclaimed.append(launch)
                    room -= 1

    def _forget(self, job: RunningJob) -> None:
        """A run never launched, whose record is someone else's now: no outcome."""
        if not job.reported:
            self.inflight.reported(job)
        self.inflight.release(job.token)

    def _next_record(self) -> tuple[Lane, Record] | None:
        """Lanes take turns, so one busy job type cannot hold every slot forever."""
        lanes = len(self.lanes)
        for i in range(lanes):
            lane = self.lanes[(self._rotation + i) % lanes]
            record = lane.pick()
            if record is not None:
                self._rotation = (self._rotation + i + 1) % lanes
                return lane, record
        return None

    def _start(self, lane: Lane, record: Record, *,
               ahead: bool = False) -> tuple[RunningJob, JobContext] | None:  # fmt: skip
        """Take a slot (``ahead``: not yet) and queue STARTED for ``record``; the run to
        launch, if any."""
        execution, worker = record.execution, self.options.worker_id
        execution_id = execution.execution_id
        running = self.inflight.active.get(execution_id)
        if running is not None:
            self.stats.redelivered += 1
            if running.lane is lane and not lane.holds(running.ref):
                running.ref = record.ref  # its claim waits: it goes with this assignment's
            lane.tracker.done(record.ref)
            return None
        if self.inflight.answered(execution_id):
            self.stats.redelivered += 1
            self._settle(lane, record.ref, None, execution)
            return None
        if self._cancelled_before_start(lane, record):
            return None
        cron = execution.spec.cron
        if (cron is not None and cron.overlap == OverlapPolicy.SKIP
                and self.inflight.job_running(execution.job_id)):  # fmt: skip
            self.stats.skipped += 1
            event = outcomes.skipped(execution, worker_id=worker, now_ms=now_ms())
            self._settle(lane, record.ref, event, execution)
            return None
        handler = self.app.get(lane.job_type)
        timeout_s = handler.timeout_for(execution)
        started_ms = max(now_ms(), execution.scheduled_at_ms)  # claimed ahead: its instant
        progress = ProgressReporter(self.options.progress_interval_s)
        try:
            ctx = build_context(execution, worker_id=worker, started_ms=started_ms,
                                timeout_s=timeout_s, progress_sink=progress.put)
        except ValidationError as exc:
            self.stats.failed += 1
            event = outcomes.failed(execution, outcomes.describe_error(exc), worker_id=worker,
                                    now_ms=now_ms())  # fmt: skip
            self._settle(lane, record.ref, event, execution)
            return None
        started = outcomes.started(execution, worker_id=worker, now_ms=started_ms)
        job = RunningJob(
            next(self._tokens), lane, execution, record.ref, handler, timeout_s,
            started=(outcomes.event_key(execution), self.encode_started(started, record.raw)),
            deadline=math.inf, next_beat=math.inf,  # set at its launch (beats: its claim, if ahead)
            signal=ctx.cancel_signal, progress=progress,
        )  # fmt: skip
        self.inflight.add(job, ahead=ahead)
        lane.pending.append(job.started)
        lane.tracker.done(record.ref)  # claimed with the STARTED, in one transaction
        self.stats.started += 1
        return job, ctx

    # -- cancels --------------------------------------------------------------------------

    def _follow_cancels(self) -> None:
        """Read jobs.control from its retention's start, before any record starts."""
        wall = now_ms()
        for request in self.control.start(wall):
            self.cancels.add(request, wall)

    def _cancel_requested(self, now: float) -> None:
        """Take the cancels that arrived and stop the runs they cover; report CANCELLED the
        stopped runs that ignored their cancel for ``cancel_grace_s``."""
        wall = now_ms()
        for request in self.control.poll():
            if not self.cancels.add(request, wall):
                continue
            for job in self.inflight.of_job(request.job_id):
                if job.cancel is None and request.covers(job.execution):
                    self._stop(job, request, now)
        self.cancels.expire(wall)
        if self._cancelling:
            self._cancelling = [job for job in self._cancelling if not job.reported]
            for job in self._cancelling:
                if now >= job.cancel_deadline and job.cancel is not None:
                    log.warning("a cancelled run did not stop within %.0f s: reported "
                                "CANCELLED, its slot stays taken until it returns",
                                self.options.cancel_grace_s,
                                extra={"execution_id": job.execution_id})  # fmt: skip
                    self._report(job, self._cancelled(job.execution, job.cancel))

    def _stop(self, job: RunningJob, request: CancelRequest, now: float) -> None:
        """Tell a run it is cancelled: an async one gets CancelledError, a sync one sees
        ``ctx.cancelled``, a run in a child process is terminated (SIGTERM, SIGKILL after
        ``cancel_grace_s``). Its end is reported CANCELLED (:meth:`_end`); a run claimed
        ahead and not launched yet ends CANCELLED at once (one whose claim still waits,
        when the claim commits: :meth:`_launch_claimed`)."""
        job.cancel, job.cancel_deadline = request, now + self.options.cancel_grace_s
        if job.token in self.inflight.ahead:
            if not job.lane.holds_pending(job.started):
                self._report(job, self._cancelled(job.execution, request))
                self.inflight.release(job.token)
            return
        if job.signal is not None:
            job.signal.set()
        if job.async_run is not None and not job.async_run.cancel_requested:
            job.async_run.cancel()
        if isinstance(self.executor, ProcessExecutor):
            self.executor.cancel(job.token, self.options.cancel_grace_s)
        self._cancelling.append(job)
        log.info("cancelling a run", extra={"execution_id": job.execution_id,
                                            "requested_by": request.requested_by})  # fmt: skip

    def _cancelled_before_start(self, lane: Lane, record: Record) -> bool:
        """A record of a cancelled job is reported CANCELLED instead of started."""
        request = self.cancels.match(record.execution) if len(self.cancels) else None
        if request is None:
            return False
        self.stats.cancelled += 1
        event = self._cancelled(record.execution, request)
        observe(event.data)
        self._settle(lane, record.ref, event, record.execution)
        return True

    def _cancelled(self, execution: ExecutionRequested, request: CancelRequest) -> Event:
        return outcomes.cancelled(execution, request, worker_id=self.options.worker_id,
                                  now_ms=now_ms())  # fmt: skip

    # -- plain records ------------------------------------------------------------------

    def _emit(self, event: Event, execution: ExecutionRequested) -> None:
        self.events.produce(self.topics.events, self.serialize(event),
                            outcomes.event_key(execution), on_delivery=_on_delivery)  # fmt: skip

    def _flush_events(self) -> None:
        """Every HEARTBEAT lands on jobs.events before the outcome that follows it."""
        if len(self.events) and self.events.flush(10) > 0:
            log.warning("HEARTBEAT records still undelivered after 10 s")

    def _beat_worker(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now < self._next_health:
            return
        self._next_health = now + self.options.worker_heartbeat_s
        record = self.identity.record(self.state, self.inflight.active, now_ms())
        self.events.produce(self.topics.workers, self.serialize(record),
                            self.options.worker_id.encode(), on_delivery=_on_delivery)  # fmt: skip
        for job_type in self.job_types:
            metrics.WORKER_HEARTBEAT.labels(job_type).set(time.time())

    def _counters(self) -> dict[str, object]:
        """The stats line: the runs, and the lanes' transactions summed over the job types."""
        lanes: Counter[str] = Counter()
        for lane in self.lanes:
            lanes.update(lane.counters())
        return {**self.stats.snapshot(), **lanes}

    def _update_stats(self) -> None:
        self.stats.running = len(self.inflight.slots)
        buffered: Counter[str] = Counter()
        for lane in self.lanes:
            buffered.update(lane.buffered())
        self.stats.buffered = dict(buffered)


def _on_delivery(err: object, message: object) -> None:
    if err is not None:
        log.warning("worker event not delivered: %s", err)


def _consumer_of(lane: Lane) -> Consumer:
    return lane.consumer
