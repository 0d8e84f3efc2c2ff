"""What a record picked to start becomes: a run (its STARTED queued for its claim), or
no run at all.

A record whose execution id is running here joins that run (a redelivery racing a
claim); one whose outcome was already produced here is skipped; one of a cancelled job is
reported CANCELLED; a cron execution with ``overlap=SKIP`` while a run of the same job
runs here is reported SUCCEEDED, result null, detail "skipped: previous run still
running", so it is not retried (runs of a job share a partition key, hence a worker; only
across a rebalance may two workers overlap); one whose params cannot be read fails, not
retried. One past the job's deadline or its attempt's queue limit is not run and reports
nothing: the status processor expires the job (pipeline/model/deadlines.py), and the
handler's side effects must not happen. A run's timeout ends by the job's deadline. Pure,
like the engine that calls it (pipeline/worker/engine.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from itertools import count

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.deadlines import capped_timeout_s, claim_refusal
from jobstream._pipeline.scheduling.cron import OverlapPolicy
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.app import WorkerApp
from jobstream._pipeline.worker.context import JobContext, build_context
from jobstream._pipeline.worker.inflight import RunningJob
from jobstream._pipeline.worker.lane import Lane, Record
from jobstream._pipeline.worker.lease import RunLease
from jobstream._pipeline.worker.options import WorkerOptions
from jobstream._pipeline.worker.progress import ProgressReporter
from jobstream._pipeline.worker.spawns import SpawnBox
from jobstream._pipeline.worker.supervisor import RunSupervisor

log = logging.getLogger(__name__)

Started = tuple[RunningJob, JobContext]


class RunStarts:
    def __init__(self, app: WorkerApp, options: WorkerOptions, *, runs: RunSupervisor,
                 encode_started: Callable[[Event, bytes | None], bytes],
                 monotonic: Callable[[], float]) -> None:  # fmt: skip
        self.app, self.options, self.runs = app, options, runs
        self._monotonic = monotonic
        self.inflight, self.stats = runs.inflight, runs.stats
        self._encode_started = encode_started
        self._tokens = count(1)

    def start(self, lane: Lane, record: Record, wall: int, *,
              ahead: bool = False) -> Started | None:  # fmt: skip
        """Take a slot (``ahead``: not yet) and queue STARTED for ``record``; the run to
        launch, if any."""
        execution, worker, runs = record.execution, self.options.worker_id, self.runs
        running = self.inflight.active.get(execution.execution_id)
        if running is not None:
            self.stats.redelivered += 1
            if running.lane is lane and not lane.holds(running.ref):
                running.ref = record.ref  # its claim waits: it goes with this assignment's
            lane.tracker.done(record.ref)
            return None
        if self.inflight.answered(execution.execution_id):
            self.stats.redelivered += 1
            runs.settle(lane, record.ref, None, execution)
            return None
        if runs.cancelled_before_start(lane, record, wall):
            return None
        cron = execution.spec.cron
        if (cron is not None and cron.overlap == OverlapPolicy.SKIP
                and self.inflight.job_running(execution.job_id)):  # fmt: skip
            self.stats.skipped += 1
            runs.settle(lane, record.ref, outcomes.skipped(execution, worker_id=worker,
                                                           now_ms=wall), execution)  # fmt: skip
            return None
        started_ms = max(wall, execution.scheduled_at_ms)  # claimed ahead: its instant
        expired = claim_refusal(execution, started_ms)
        if expired is not None:
            self.stats.expired += 1
            log.info("execution not run: %s", expired, extra={
                "job_id": execution.job_id, "execution_id": execution.execution_id})  # fmt: skip
            runs.settle(lane, record.ref, None, execution)
            return None
        handler = self.app.get(lane.job_type)
        timeout_s = capped_timeout_s(execution.spec, start_ms=started_ms,
                                     timeout_s=handler.timeout_for(execution))  # fmt: skip
        progress, spawns = ProgressReporter(self.options.progress_interval_s), SpawnBox()
        lease = RunLease(lease_s=self.options.lease_s, claimed_at=self._monotonic(),
                         clock=self._monotonic)  # fmt: skip
        try:
            ctx = build_context(execution, worker_id=worker, started_ms=started_ms,
                                timeout_s=timeout_s, progress_sink=progress.put,
                                spawn_sink=spawns.put, lease=lease)  # fmt: skip
        except ValidationError as exc:
            self.stats.failed += 1
            event = outcomes.failed(execution, outcomes.describe_error(exc), worker_id=worker,
                                    now_ms=wall)  # fmt: skip
            runs.settle(lane, record.ref, event, execution)
            return None
        started = outcomes.started(execution, worker_id=worker, now_ms=started_ms)
        job = RunningJob(
            next(self._tokens), lane, execution, record.ref, handler, timeout_s,
            started=(outcomes.event_key(execution), self._encode_started(started, record.raw)),
            deadline=math.inf, next_beat=math.inf,  # set at its launch (beats: its claim, if ahead)
            signal=ctx.cancel_signal, progress=progress, spawns=spawns, lease=lease,
        )  # fmt: skip
        self.inflight.add(job, ahead=ahead)
        lane.tx.pending.append(job.started)
        lane.tracker.done(record.ref)  # claimed with the STARTED, in one transaction
        self.stats.started += 1
        return job, ctx

