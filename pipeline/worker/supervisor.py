"""The runs a worker holds, watched: their ends, deadlines, heartbeats, progress and
cancels, and the outcome each one gets.

Pure decisions, like the rest of :mod:`jobstream._pipeline.worker.engine`: every method is given the
clock (``now``: monotonic seconds, ``wall``: epoch ms) and appends what it wants done to the
engine's list of actions (pipeline/worker/actions.py). Outcomes go to their lane's next
transaction (``lane.tx``); HEARTBEAT records leave outside them (:class:`Emit`).

- Timeouts: an async run is cancelled at its deadline (it ends TIMED_OUT); a sync run, and
  an async one that ignores its cancellation for ``async_grace_s``, is reported TIMED_OUT
  here. A run in a child process is reported so too, and its child killed.
- Launches: a launched run's HEARTBEATs and outcome say when its handler really began
  (``launched_at_ms``, pipeline/worker/launched.py), which its STARTED cannot.
- Heartbeats: a HEARTBEAT per run every ``heartbeat_s``, or sooner carrying the progress its
  handler reported (at most one per ``progress_interval_s``); its last report goes before
  its outcome. A HEARTBEAT carrying a checkpoint goes in the lane's next transaction (due
  at once), with the checkpoint on jobs.checkpoints; the run's outcome carries its latest
  checkpoint (FAILED, TIMED_OUT, CANCELLED) or, SUCCEEDED, ends it with a tombstone.
- Children (``ctx.spawn``): what a run's handler spawned goes to its lane's next
  transaction at each turn, and what is left when its outcome is decided with that
  outcome (pipeline/worker/spawns.py).
- Cancels: a record of a cancelled job is not started but reported CANCELLED; a run of one
  is stopped and reported CANCELLED when it returns, or after ``cancel_grace_s`` if it
  ignores the cancel (its slot stays taken until it returns); a run claimed ahead and not
  launched yet ends CANCELLED at once.
- Leases: a run none of whose HEARTBEATs has reached the brokers for 3/4 of the status
  processor's lease (pipeline/worker/lease.py) is reported FAILED (``LeaseLost``, retryable)
  and stopped as a cancel stops it (a child process terminated), before the status
  processor's lease passes and its retry runs elsewhere.
- Shutdown: the runs still going after the drain are given up, each reported FAILED
  (``WorkerStopped``, retryable), so that its retry runs elsewhere without waiting for a
  lease.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.lifecycle import LEASE_LOST, WORKER_STOPPED, LifecycleKind
from jobstream._pipeline.model.records import ExecutionRequested, evolve
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime.observed import observe
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.actions import Action, Emit, Expire, Kill, Stop
from jobstream._pipeline.worker.cancels import CancelSet
from jobstream._pipeline.worker.checkpoints import checkpoint_record
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.inflight import InFlight, RunningJob
from jobstream._pipeline.worker.lane import Lane, Record
from jobstream._pipeline.worker.lease import MARGIN_SHARE
from jobstream._pipeline.worker.offsets import OffsetRef
from jobstream._pipeline.worker.options import WorkerOptions, WorkerStats
from jobstream._pipeline.worker.progress import Reports
from jobstream._pipeline.worker.results import result_headers
from jobstream._pipeline.worker.runlogs import logs_record
from jobstream._pipeline.worker.spawns import Spawned
from jobstream._pipeline.worker.transactions import moving_mean

log = logging.getLogger(__name__)


class RunSupervisor:
    def __init__(self, options: WorkerOptions, *, inflight: InFlight, stats: WorkerStats,
                 serialize: Callable[[Event], bytes], results_topic: str, processes: bool,
                 actions: list[Action]) -> None:  # fmt: skip
        self.options, self.worker_id = options, options.worker_id
        self.inflight, self.stats = inflight, stats
        self._serialize, self._results_topic = serialize, results_topic
        self._processes = processes
        """Handlers run in child processes: a run past its deadline has its child killed."""
        self._actions = actions
        self.cancels = CancelSet()
        self._cancelling: list[RunningJob] = []
        """Runs stopped by a cancel whose outcome is still to come."""

    # -- ends -----------------------------------------------------------------------------

    def end(self, end: Finished, now: float, wall: int) -> None:
        """A run returned (or was cancelled): free its slot and report its outcome."""
        job = self.inflight.release(end.token)
        if job is not None and not math.isinf(job.deadline):  # launched: count its time
            took = now - (job.deadline - job.timeout_s)  # the deadline counts from launch
            job.lane.run_s = moving_mean(job.lane.run_s, took)
        if job is None or job.reported:
            return  # a timed-out run whose thread returned: only its slot mattered
        if job.cancel is not None:  # stopped by a cancel: CANCELLED, however it returned
            event: Event | None = self.cancelled(job.execution, job.cancel, wall)
        else:
            event = end.outcome(job.execution, timeout_s=job.timeout_s, worker_id=self.worker_id,
                                results_topic=self._results_topic)  # fmt: skip
            if end.result is not None and end.result.kept:  # joins the SUCCEEDED's transaction
                execution = job.execution
                job.lane.tx.add_result(execution.job_id.encode(), end.result.body,
                                       result_headers(end.result, execution.execution_id,
                                                      execution.attempt))  # fmt: skip
        if event is not None:  # None: cancelled when given up at the stop
            self.report(job, event, now, wall)

    def time_out(self, now: float, wall: int) -> None:
        """Cancel async runs at their deadline; report the overdue ones TIMED_OUT once no
        grace is left them (a sync run at once)."""
        for job in self.inflight.overdue(now):
            run = job.async_run
            if run is not None and not run.cancel_requested:
                self._actions.append(Expire(job))
            if run is None or now >= job.deadline + self.options.async_grace_s:
                if self._processes:
                    self._actions.append(Kill(job.token))
                event = (self.cancelled(job.execution, job.cancel, wall) if job.cancel is not None
                         else outcomes.timed_out(job.execution, job.timeout_s,
                                                 worker_id=self.worker_id,
                                                 now_ms=wall))  # fmt: skip
                self.report(job, event, now, wall)

    # -- leases ---------------------------------------------------------------------------

    def hold_leases(self, now: float, wall: int) -> None:
        """Stop the launched runs that lost their lease here, reporting each FAILED at once."""
        for job in self.inflight.seated():
            if job.lease is not None and not job.lease.ok:
                self.lose_lease(job, now, wall)
                self._actions.append(Stop(job))

    def lose_lease(self, job: RunningJob, now: float, wall: int) -> None:
        """Report a run FAILED (``LeaseLost``, retryable): its lease was lost here."""
        held_s = self.options.lease_s * (1 - MARGIN_SHARE)
        log.warning("no heartbeat reached the brokers for %g s: the run is stopped before its "
                    "lease passes", held_s, extra={"execution_id": job.execution_id,
                                                   "job_id": job.execution.job_id})  # fmt: skip
        error = outcomes.ErrorDescription(
            LEASE_LOST, f"none of the run's heartbeats reached the brokers for {held_s:g} s "
            f"(3/4 of the {self.options.lease_s:g} s lease): stopped by its worker, so that its "
            "retry does not run beside it", None, True)  # fmt: skip
        self.report(job, outcomes.failed(job.execution, error, worker_id=self.worker_id,
                                         now_ms=wall), now, wall)  # fmt: skip

    # -- heartbeats -----------------------------------------------------------------------

    def beat(self, now: float, wall: int) -> None:
        """A HEARTBEAT per run every ``heartbeat_s``, or sooner carrying the progress its
        handler reported (at most one per ``progress_interval_s``); and the children its
        handler spawned to its lane's next transaction."""
        for job in self.inflight.seated():
            reports = job.progress.due(now)
            if reports is not None:
                self._beat(job, now, wall, reports)
            self._spawn(job, job.spawns.take())
        for job in self.inflight.beats_due(now):
            self._beat(job, now, wall, None)

    def _beat(self, job: RunningJob, now: float, wall: int, reports: Reports | None) -> None:
        self.inflight.beat_at(job, now + self.options.heartbeat_s)
        self._emit_beat(job, wall, reports)

    def _spawn(self, job: RunningJob, children: list[Spawned]) -> None:
        """The children a run spawned, for jobs.intake in its lane's next transaction."""
        for child in children:
            record = child.record
            job.lane.tx.add_spawned(partition_key(record.job_id, record.workflow_id),
                                    self._serialize(Event.of(record)))  # fmt: skip
        self.stats.spawned += len(children)

    def _emit_beat(self, job: RunningJob, wall: int, reports: Reports | None) -> None:
        """A HEARTBEAT outside the transactions; one carrying a checkpoint in the lane's next,
        with the checkpoint on jobs.checkpoints."""
        progress, saved = reports or (None, None)
        execution = job.execution
        checkpoint = None if saved is None else checkpoint_record(saved, execution)
        key = outcomes.event_key(execution)
        event = outcomes.heartbeat(execution, worker_id=self.worker_id, now_ms=wall,
                                   progress=progress, checkpoint=checkpoint,
                                   launched_at_ms=job.launched.at_ms)  # fmt: skip
        if checkpoint is None:
            self._actions.append(Emit(key, event, job.lease))
            return
        job.checkpoint = checkpoint
        job.lane.tx.pending.append((key, self._serialize(event)))
        job.lane.tx.add_checkpoint(execution.job_id.encode(),
                                   self._serialize(Event.of(checkpoint)))  # fmt: skip

    # -- cancels --------------------------------------------------------------------------

    def cancels_arrived(self, requests: list[CancelRequest], now: float, wall: int) -> None:
        """Take the cancels that arrived and stop the runs they cover; report CANCELLED the
        stopped runs that ignored their cancel for ``cancel_grace_s``."""
        for request in requests:
            if not self.cancels.add(request, wall):
                continue
            for job in self.inflight.of_job(request.job_id):
                if job.cancel is None and request.covers(job.execution):
                    self._stop(job, request, now, wall)
        self.cancels.expire(wall)
        if self._cancelling:
            self._cancelling = [job for job in self._cancelling if not job.reported]
            for job in self._cancelling:
                if now >= job.cancel_deadline and job.cancel is not None:
                    log.warning("a cancelled run did not stop within %.0f s: reported "
                                "CANCELLED, its slot stays taken until it returns",
                                self.options.cancel_grace_s,
                                extra={"execution_id": job.execution_id})  # fmt: skip
                    self.report(job, self.cancelled(job.execution, job.cancel, wall), now, wall)

    def _stop(self, job: RunningJob, request: CancelRequest, now: float, wall: int) -> None:
        """A run claimed ahead and not launched yet ends CANCELLED at once (one whose claim
        still waits, when the claim commits: the engine's ``claimed``); any other is told
        to stop, and reported when it ends."""
        job.cancel, job.cancel_deadline = request, now + self.options.cancel_grace_s
        if job.token in self.inflight.ahead:
            if not job.lane.tx.holds_pending(job.started):
                self.report(job, self.cancelled(job.execution, request, wall), now, wall)
                self.inflight.release(job.token)
            return
        self._actions.append(Stop(job))
        self._cancelling.append(job)
        log.info("cancelling a run", extra={"execution_id": job.execution_id,
                                            "requested_by": request.requested_by})  # fmt: skip

    def cancelled_before_start(self, lane: Lane, record: Record, wall: int) -> bool:
        """A record of a cancelled job is reported CANCELLED instead of started."""
        request = self.cancels.match(record.execution) if len(self.cancels) else None
        if request is None:
            return False
        self.stats.cancelled += 1
        event = self.cancelled(record.execution, request, wall)
        observe(event.data)
        self.settle(lane, record.ref, event, record.execution)
        return True

    def cancelled(self, execution: ExecutionRequested, request: CancelRequest, wall: int) -> Event:
        return outcomes.cancelled(execution, request, worker_id=self.worker_id, now_ms=wall)

    # -- outcomes -------------------------------------------------------------------------

    def report(self, job: RunningJob, event: Event, now: float, wall: int) -> None:
        """Queue a run's final outcome for its lane's next transaction, after its last
        progress report (the lane flushes HEARTBEATs before its transaction) and with the
        children its handler spawned that wait still."""
        self._last_progress(job, now, wall)
        self._spawn(job, job.spawns.close())
        self.stats.count(event.data.kind.lower())
        observe(event.data)
        self.inflight.reported(job)
        self.queue_outcome(job.lane, self._with_run(job, self._with_checkpoint(job, event)),
                           job.execution)  # fmt: skip

    def _last_progress(self, job: RunningJob, now: float, wall: int) -> None:
        reports = job.progress.last(now)
        if reports is not None:
            self._emit_beat(job, wall, reports)

    def _with_checkpoint(self, job: RunningJob, event: Event) -> Event:
        """A run's outcome with its latest checkpoint, for the next attempt; a SUCCEEDED
        tombstones the job's checkpoint on jobs.checkpoints, if it has one."""
        execution = job.execution
        if event.data.kind == LifecycleKind.SUCCEEDED:
            if job.checkpoint is not None or execution.resume_from is not None:
                job.lane.tx.add_checkpoint(execution.job_id.encode(), None)
            return event
        if job.checkpoint is None:
            return event
        return Event(event.name, evolve(event.data, checkpoint=job.checkpoint))

    def _with_run(self, job: RunningJob, event: Event) -> Event:
        """A launched run's outcome telling how many lines it kept (its lines, if any, go
        to jobs.logs in the transaction of its outcome) and when its handler began (none:
        it ended held for its instant)."""
        lines, job.log = job.log, None
        if lines is None:
            return event
        record, kept = logs_record(lines, job.execution)
        if record is not None:
            job.lane.tx.add_log(*record)
        return Event(event.name, evolve(event.data, log_lines=kept,
                                        launched_at_ms=job.launched.at_ms))  # fmt: skip

    def settle(self, lane: Lane, ref: OffsetRef, event: Event | None,
               execution: ExecutionRequested) -> None:  # fmt: skip
        """A record finished without a run: its offset is done, and ``event``, if any, goes
        in with it."""
        if event is not None:
            self.queue_outcome(lane, event, execution)
        lane.tracker.done(ref)

    def queue_outcome(self, lane: Lane, event: Event, execution: ExecutionRequested) -> None:
        """An outcome for the lane's next transaction."""
        lane.tx.pending.append((outcomes.event_key(execution), self._serialize(event)))
        self.inflight.remember(execution.execution_id)
        if execution.workflow_id:
            lane.tx.schedule.hurry()  # the workflow's next steps may wait on this outcome

    def give_up(self, now: float, wall: int) -> None:
        """Report the runs still going at the stop: FAILED (``WorkerStopped``), or
        CANCELLED for a run whose cancel had reached it."""
        given_up = self.inflight.give_up()
        self.stats.given_up = len(given_up)
        if given_up:
            log.warning("giving up running jobs", extra={
                "executions": sorted(job.execution_id for job in given_up)})  # fmt: skip
        error = outcomes.ErrorDescription(
            WORKER_STOPPED, f"the worker stopped before the run ended (drain of "
            f"{self.options.drain_timeout_s:g} s)", None, True)  # fmt: skip
        for job in given_up:
            self._last_progress(job, now, wall)
            self._spawn(job, job.spawns.close())
            event = (self.cancelled(job.execution, job.cancel, wall) if job.cancel is not None
                     else outcomes.failed(job.execution, error, worker_id=self.worker_id,
                                          now_ms=wall))  # fmt: skip
            self.queue_outcome(job.lane, self._with_run(job, self._with_checkpoint(job, event)),
                               job.execution)  # fmt: skip
