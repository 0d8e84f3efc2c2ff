"""Run a handler in a test, in this process, with no broker: its outcome as the worker records it.

[`run`][jobstream.testing.run] gives one job to the worker's own loop
(pipeline/worker/driver.py: the real engine, supervisor, lanes, transactions and executor,
over in-memory Kafka clients and on the real clock) and returns what the worker wrote for
the run: its last event's kind (SUCCEEDED, FAILED, TIMED_OUT or CANCELLED), the result as
it went to jobs.results, the error with its retryability, the lines the handler logged,
every progress report and checkpoint it made, and the children it spawned (``ctx.spawn``,
for a job given a ``workflow_id``). Nothing is decided here: a ``NonRetryableError`` (or
``ValidationError``) fails the run for good, any other exception may be retried, a result
over ``JOBSTREAM_MAX_RESULT_BYTES`` fails with ``ResultTooLargeError``, because that is
what the worker does with them.

```python
import jobstream.testing
from myapp.jobs import app

def test_report_counts_rows():
    outcome = jobstream.testing.run(app, "report.generate", params={"rows": [1, 2]}, attempt=2)
    assert outcome.state == "SUCCEEDED"
    assert outcome.result == {"rows": 2}
```

A handler that resumes is tested by running it twice: the first run's last checkpoint
is what the next attempt finds in ``ctx.resume_from`` after a failure.

```python
def test_import_resumes_where_it_stopped():
    first = jobstream.testing.run(app, "data.import", params={"fail_at": 550})
    assert first.state == "FAILED" and first.checkpoints[-1] == {"row": 500}
    second = jobstream.testing.run(app, "data.import", attempt=2,
                                   resume_from=first.checkpoints[-1])
    assert second.result == {"began_at": 500}
```

(docs/workers.md, "Checkpoints", has the handler.)

A run is the handler's context of the test's choosing (params, attempt, parent results,
a checkpoint to resume from, a timeout, a cancel) and nothing else: no retries follow a
failure, no workflow step waits on it. For the whole path (a broker, the timers, the
status processor, a worker), the ``jobstream_*`` fixtures of
[`jobstream.pytest_plugin`][jobstream.pytest_plugin].
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

import orjson

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.labels import STEP_LABEL
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import (
    Checkpoint,
    ErrorInfo,
    Event,
    ExecutionRequested,
    JobLifecycle,
    JobSpec,
    JobSubmitted,
    ParentResultRecord,
    Progress,
    StepOutcome,
)
from jobstream._pipeline.scheduling import execution_id, new_job_id
from jobstream._pipeline.worker.app import Handler, WorkerApp
from jobstream._pipeline.worker.capture import LogLine
from jobstream._pipeline.worker.checkpoints import CheckpointReport, decode_state, encode_state
from jobstream._pipeline.worker.context import JobContext, ParentResult, Report
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.outcomes import RUN_ENDS
from jobstream._pipeline.worker.progress import ProgressReport
from jobstream._pipeline.worker.results import CONTENT_TYPE_HEADER, EXECUTION_HEADER, JSON
from jobstream._pipeline.worker.runlogs import DROPPED_HEADER, decode_lines
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL

__all__ = ["LogLine", "Outcome", "run"]

WORKER_ID = "jobstream.testing"
"""The worker id on the run's events."""
REQUESTED_BY = "jobstream.testing"
"""Who asked for a cancel given with ``cancel_after_s``."""
CANCEL_REASON = "cancelled by the test"
_POLL_S = 0.01
"""How long a turn of the worker's loop waits for the handler to end."""
_HOLD_S = 30.0
"""How long a handler cancelled from its start waits for its cancel (it comes at the
loop's next turn)."""
_MARGIN_S = 30.0
"""Time beyond the worker's own deadlines after which [`run`][jobstream.testing.run] stops
waiting."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a run ended, as the worker recorded it on jobs.events, jobs.results and jobs.logs."""

    state: LifecycleKind
    """``SUCCEEDED``, ``FAILED``, ``TIMED_OUT`` or ``CANCELLED``: the kind of the run's last
    event (a str, so ``outcome.state == "SUCCEEDED"`` holds)."""
    result: Any = None
    """The result as a reader gets it back: the JSON value, parsed; bytes for a result of
    another content type (``bytes``, a ``Result``'s body). None when the run did not
    succeed or its handler returned None (the worker keeps no record for that)."""
    content_type: str | None = None
    """The result's content type on jobs.results: ``application/json``,
    ``application/octet-stream``, or a ``Result``'s."""
    result_bytes: bytes | None = None
    """The result's value on jobs.results, as the worker encoded it."""
    error: ErrorInfo | None = None
    """For FAILED and TIMED_OUT: ``error_type`` (the exception's qualified name, or
    ``Timeout``), ``message``, ``traceback`` and ``retryable``, as the retry router reads them."""
    progress: tuple[Progress, ...] = ()
    """Every report the handler made (``ctx.progress``), in order. The worker sends at
    most one per ``progress_interval_s`` on its HEARTBEATs, and always the last one: those
    are among [`events`][jobstream.testing.Outcome.events]."""
    checkpoints: tuple[Any, ...] = ()
    """Every checkpoint the handler saved (``ctx.checkpoint``), in order, as the next
    attempt would read it in ``ctx.resume_from`` (a JSON value as saved, bytes as bytes).
    The worker keeps the latest one for the job's next attempt: the run's end carries it
    (FAILED, TIMED_OUT, CANCELLED), a SUCCEEDED ends it on jobs.checkpoints."""
    logs: tuple[LogLine, ...] = ()
    """The lines the run's log kept (jobs.logs), each ``at_ms``, ``level``, ``logger``,
    ``msg`` and, for a record with an exception, ``exc``."""
    logs_dropped: int = 0
    """Lines past the log's bounds (``JOBSTREAM_MAX_LOG_LINES``, ``JOBSTREAM_MAX_LOG_BYTES``)."""
    events: tuple[JobLifecycle, ...] = ()
    """The run's records on jobs.events: STARTED, any HEARTBEAT, and its end."""
    spawned: tuple[JobSubmitted, ...] = ()
    """The children the handler spawned (``ctx.spawn``), in order: the JobSubmitted records
    the worker put on jobs.intake, each with its derived ``job_id``, the run's
    ``workflow_id`` and the labels ``jobstream.spawned_by`` and ``jobstream.step``. Those of
    a run that failed or timed out too: they were submitted all the same."""


def run(
    app: WorkerApp,
    job_type: str,
    *,
    params: Mapping[str, Any] | None = None,
    attempt: int = 1,
    parent_results: Iterable[ParentResult] = (),
    resume_from: Any = None,
    timeout_s: float | None = None,
    cancel_after_s: float | None = None,
    job_id: str | None = None,
    owner: str = "tests",
    workflow_id: str | None = None,
    step: str | None = None,
    log_level: int | str = logging.INFO,
    settings: Settings | None = None,
) -> Outcome:
    """Run ``app``'s handler of ``job_type`` once, as a worker would, and return its outcome.

    - ``params``: the job's parameters (a JSON object; ``ctx.params``).
    - ``attempt``: ``ctx.attempt``, 1 for the first.
    - ``parent_results``: the job's parents as they ended (``ctx.parent_results``, by step
      name, or job id for a parent without one), in the job's ``depends_on`` order.
    - ``resume_from``: what an earlier attempt saved with ``ctx.checkpoint`` (a JSON value,
      or bytes), handed to the handler as ``ctx.resume_from``; None: no checkpoint. Checked
      as ``ctx.checkpoint`` checks it (an InvalidArgumentError naming ``state``).
    - ``timeout_s``: the job's own timeout; by default the handler's ``timeout_s``, else
      300 s. A sync handler past it is reported TIMED_OUT at once and its thread runs on
      until it returns (Python cannot stop a thread), as in a worker; an ``async def``
      one is cancelled.
    - ``cancel_after_s``: a cancel of the run reaches the worker this long after the
      handler began; ``0``: the handler begins with it (``ctx.cancelled`` is True from its
      first line; an async handler gets ``CancelledError`` at its first await that
      yields). The run ends CANCELLED however the handler then returns; one that ignores
      the cancel is reported CANCELLED after the worker's grace (5 s). A handler that ends
      before the cancel comes ends as it would have.
    - ``workflow_id``, ``step``: the workflow the job belongs to, and its step name in it
      (``ctx.workflow_id``, ``ctx.step``): a job with a workflow may spawn children
      (``ctx.spawn``), which :attr:`Outcome.spawned` lists. A ``job_id`` fixed too makes
      their ids those of a worker's run of that job.
    - ``log_level``: the root logger's level for the run (the worker's
      ``JOBSTREAM_LOG_LEVEL``, INFO by default), restored afterwards: a run's log holds
      what passes the loggers' levels.
    - ``settings``: the worker's settings (``JOBSTREAM_MAX_RESULT_BYTES``, the log's
      bounds, ...); by default read from the environment as a worker reads them.

    Raises ``ConfigurationError`` when ``app`` has no handler for ``job_type``.
    """
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if cancel_after_s is not None and not cancel_after_s >= 0:
        raise ValueError(f"cancel_after_s must not be negative, got {cancel_after_s}")
    probe = _Probe(app.get(job_type), held=cancel_after_s == 0)
    execution = _execution(job_type, params=params, attempt=attempt,
                           parents=parent_results, resume_from=resume_from,
                           timeout_s=timeout_s, job_id=job_id, owner=owner,
                           workflow_id=workflow_id, step=step)  # fmt: skip
    driver = WorkerDriver(probe.app, settings=settings, now_ms=execution.scheduled_at_ms,
                          worker_id=WORKER_ID, concurrency=1, poll_timeout_s=_POLL_S)  # fmt: skip
    options = driver.loop.options
    limit_s = (probe.handler.timeout_for(execution) + options.async_grace_s
               + options.cancel_grace_s + (cancel_after_s or 0) + _MARGIN_S)  # fmt: skip
    root = logging.getLogger()
    level = root.level
    try:
        root.setLevel(log_level)
        driver.fire(Event("ExecutionRequested", execution))
        end = _drive(driver, execution, probe, cancel_after_s, limit_s)
    finally:
        driver.shut_down(wait=False)
        root.setLevel(level)
    return _outcome(driver, execution, end, probe.reports)


class _Probe:
    """The handler under test, in an app of its own: each progress report and checkpoint
    kept as well as given to the worker, its start noted, and (``held``) its start held
    until the run's cancel has reached it."""

    def __init__(self, handler: Handler, *, held: bool) -> None:
        self.reports: list[Report] = []
        self.began_at: float | None = None
        """Monotonic instant the handler began."""
        self._held = held
        self.app = WorkerApp()
        func = handler.func
        if handler.is_async:

            async def observed_async(ctx: JobContext) -> Any:
                return await func(self._enter(ctx))

            self.app.handler(handler.job_type, timeout_s=handler.timeout_s)(observed_async)
        else:

            def observed(ctx: JobContext) -> Any:
                return func(self._enter(ctx))

            self.app.handler(handler.job_type, timeout_s=handler.timeout_s)(observed)
        self.handler = self.app.get(handler.job_type)

    def _enter(self, ctx: JobContext) -> JobContext:
        self.began_at = time.monotonic()
        if self._held:  # blocks an async handler's loop too: its cancel is queued meanwhile
            ctx.cancel_signal.wait(_HOLD_S)
        return replace(ctx, progress_sink=partial(self._report, ctx.progress_sink))

    def _report(self, worker: Callable[[Report], None], report: Report) -> None:
        self.reports.append(report)
        worker(report)


def _execution(job_type: str, *, params: Mapping[str, Any] | None, attempt: int,
               parents: Iterable[ParentResult], resume_from: Any, timeout_s: float | None,
               job_id: str | None, owner: str, workflow_id: str | None,
               step: str | None) -> ExecutionRequested:  # fmt: skip
    """The ExecutionRequested the timers would fire for such a job, due now."""
    now = now_ms()
    job_id = job_id or new_job_id(now)
    saved = None
    if resume_from is not None:  # as if the attempt before this one saved it
        state, is_json = encode_state(resume_from)
        earlier = max(1, attempt - 1)
        saved = Checkpoint(state=state, json=is_json, attempt=earlier,
                           execution_id=execution_id(job_id, earlier, now), at_ms=now)  # fmt: skip
    timeout_ms = None if timeout_s is None else max(1, round(timeout_s * 1000))
    spec = JobSpec(job_type=job_type, owner=owner,
                   params=orjson.dumps(params if params is not None else {}).decode(),
                   timeout_ms=timeout_ms,
                   labels={} if step is None else {STEP_LABEL: step})  # fmt: skip
    return ExecutionRequested(
        job_id=job_id, workflow_id=workflow_id,
        execution_id=execution_id(job_id, attempt, now), attempt=attempt,
        epoch=now, scheduled_at_ms=now, fired_at_ms=now,
        deadline_ms=now + timeout_ms if timeout_ms else None, spec=spec,
        parent_results=[_parent_record(parent) for parent in parents], resume_from=saved,
    )  # fmt: skip


def _parent_record(parent: ParentResult) -> ParentResultRecord:
    """A parent as the timers put it in the execution: its result as JSON text."""
    text = None if parent.result is None else orjson.dumps(parent.result).decode()
    return ParentResultRecord(job_id=parent.job_id, outcome=StepOutcome(parent.outcome),
                              result=text, result_uri=parent.result_uri,
                              step=parent.step)  # fmt: skip


def _drive(driver: WorkerDriver, execution: ExecutionRequested, probe: _Probe,
           cancel_after_s: float | None, limit_s: float) -> JobLifecycle:  # fmt: skip
    """Turn the worker's loop, its clock the real one, until the run's end is committed;
    the cancel goes in once ``cancel_after_s`` has passed since the handler began."""
    give_up = time.monotonic() + limit_s
    cancelling = cancel_after_s is not None
    while True:
        driver.clock.now_ms = max(driver.clock.now_ms, now_ms())
        began = probe.began_at
        if cancelling and began is not None and time.monotonic() >= began + (cancel_after_s or 0):
            driver.cancel(CancelRequest(job_id=execution.job_id, requested_at_ms=now_ms(),
                                        up_to_epoch=execution.epoch, requested_by=REQUESTED_BY,
                                        reason=CANCEL_REASON))  # fmt: skip
            cancelling = False
        driver.step(1)
        for event in driver.events(execution.execution_id):
            if event.kind in RUN_ENDS:
                return cast(JobLifecycle, event)
        if time.monotonic() > give_up:
            raise JobstreamError(f"the worker reported no end of the run within {limit_s:g} s")


def _outcome(driver: WorkerDriver, execution: ExecutionRequested, end: JobLifecycle,
             reports: list[Report]) -> Outcome:  # fmt: skip
    """What the worker wrote for the run, read back from the topics."""
    result = body = content_type = None
    for message in _of_run(driver, driver.topics.results, execution):
        body, content_type = message.value(), header(message.headers(), CONTENT_TYPE_HEADER)
        result = orjson.loads(body or b"null") if content_type == JSON else body
    lines: list[LogLine] = []
    dropped = 0
    for message in _of_run(driver, driver.topics.logs, execution):
        lines.extend(cast(list[LogLine], decode_lines(message.value() or b"")))
        dropped += int(header(message.headers(), DROPPED_HEADER) or 0)
    return Outcome(
        state=end.kind, result=result, content_type=content_type, result_bytes=body,
        error=end.error,
        progress=tuple(Progress(fraction=r.fraction, message=r.message, at_ms=r.at_ms)
                       for r in reports if isinstance(r, ProgressReport)),
        checkpoints=tuple(decode_state(r.state, r.json) for r in reports
                          if isinstance(r, CheckpointReport)),
        logs=tuple(lines), logs_dropped=dropped,
        events=tuple(driver.events(execution.execution_id)),
        spawned=tuple(record for record in driver.submitted()
                      if record.spec.labels.get(SPAWNED_BY_LABEL) == execution.job_id),
    )  # fmt: skip


def _of_run(driver: WorkerDriver, topic: str, execution: ExecutionRequested) -> list[Any]:
    """The records of ``topic`` the worker wrote for the run (keyed by job id, its
    execution in a header)."""
    return [message for message in driver.broker.records(topic)
            if header(message.headers(), EXECUTION_HEADER) == execution.execution_id]  # fmt: skip

