"""The JobLifecycle events a worker emits, shaped as docs/lifecycle.md defines them.

| kind | carries |
|---|---|
| STARTED | ``execution`` (the ExecutionRequested as received), worker, attempt, epoch |
| HEARTBEAT | ``execution_id``, ``epoch``, ``worker_id``, ``progress`` (``ctx.progress``), |
|  | ``checkpoint`` (``ctx.checkpoint``: such a HEARTBEAT goes in the lane's transaction), |
|  | ``launched_at_ms`` (when its handler began; null before) |
| SUCCEEDED | ``result`` (JSON text, at most 256 KB) or ``result_uri`` (jobs.results) |
| FAILED | ``error`` (type, message, traceback, ``retryable``), ``execution`` |
|  | (type ``WorkerCrashed``: the handler's child process died, ``--isolation process``) |
| TIMED_OUT | ``error`` (type ``Timeout``, retryable), ``execution`` |
| CANCELLED | ``requested_by``, ``detail`` (the reason), ``execution`` |
| HELD | ``held_by`` (``concurrency:<key>``), ``waiting_for`` (the job ids of the key's |
|  | runs here): a record parked behind its concurrency key (pipeline/worker/keyed.py) |

FAILED, TIMED_OUT and CANCELLED of a run that saved a checkpoint carry its latest one
(``checkpoint``), set by the supervisor when it reports them; the end of a launched run
carries ``log_lines`` and ``launched_at_ms`` (when its handler really began: STARTED's
``at_ms`` is its claim's instant, or its due instant for a run claimed ahead).

Every event names the job, execution, attempt, epoch and worker, and is keyed like every
other record of the job (:func:`jobstream._pipeline.partitioning.partition_key`), so one partition
of
jobs.events holds a job's whole history in order.

Errors are described, and their retryability decided, in pipeline/worker/failures.py.

A run stopped by a cancel (or a record of a cancelled job, never started) is CANCELLED
with who asked and why: not a failure, so the retry router leaves it alone.

A run skipped by the overlap policy is reported as SUCCEEDED with ``result`` null and the
detail :data:`SKIPPED_DETAIL`: nothing failed, and the schedule must not be retried.
"""

from __future__ import annotations

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import (
    Checkpoint,
    ErrorInfo,
    Event,
    ExecutionRequested,
    Progress,
    lifecycle,
)
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.worker.failures import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
from jobstream._pipeline.worker.failures import MAX_TRACEBACK_CHARS as MAX_TRACEBACK_CHARS
from jobstream._pipeline.worker.failures import ErrorDescription, timeout_error
from jobstream._pipeline.worker.failures import describe_error as describe_error
from jobstream._pipeline.worker.progress import ProgressReport
from jobstream._pipeline.worker.results import EncodedResult, result_uri

SKIPPED_DETAIL = "skipped: previous run still running"

RUN_ENDS = frozenset({LifecycleKind.SUCCEEDED, LifecycleKind.FAILED, LifecycleKind.TIMED_OUT,
                      LifecycleKind.CANCELLED})  # fmt: skip
"""The kinds a worker ends a run with: the last event of every run it reports."""


def event_key(execution: ExecutionRequested) -> bytes:
    return partition_key(execution.job_id, execution.workflow_id)


def started(execution: ExecutionRequested, *, worker_id: str, now_ms: int) -> Event:
    return Event.of(lifecycle(LifecycleKind.STARTED, execution, at_ms=now_ms,
                              worker_id=worker_id, execution=execution))  # fmt: skip


def held(execution: ExecutionRequested, *, held_by: str, waiting_for: list[str],
         worker_id: str, now_ms: int) -> Event:
    """HELD of a record parked behind its concurrency key: what it waits on, and behind whom."""
    return Event.of(lifecycle(LifecycleKind.HELD, execution, at_ms=now_ms, worker_id=worker_id,
                              held_by=held_by, waiting_for=waiting_for))  # fmt: skip


def heartbeat(execution: ExecutionRequested, *, worker_id: str, now_ms: int,
              progress: ProgressReport | None = None, checkpoint: Checkpoint | None = None,
              launched_at_ms: int | None = None) -> Event:  # fmt: skip
    """HEARTBEAT of a run, carrying its handler's latest ``progress`` report and
    ``checkpoint`` if they wait, and when its handler began (None: not yet)."""
    report = None if progress is None else Progress(fraction=progress.fraction,
                                                    message=progress.message,
                                                    at_ms=progress.at_ms)  # fmt: skip
    return Event.of(lifecycle(LifecycleKind.HEARTBEAT, execution, at_ms=now_ms,
                              worker_id=worker_id, progress=report, checkpoint=checkpoint,
                              launched_at_ms=launched_at_ms))  # fmt: skip


def succeeded(
    execution: ExecutionRequested, result: EncodedResult, *, results_topic: str,
    worker_id: str, now_ms: int,
) -> Event:  # fmt: skip
    """SUCCEEDED with the result inline when small JSON, else where jobs.results holds it."""
    uri = None if result.inline is not None else result_uri(results_topic, execution.job_id)
    return Event.of(lifecycle(LifecycleKind.SUCCEEDED, execution, at_ms=now_ms,
                              worker_id=worker_id, result=result.inline,
                              result_uri=uri))  # fmt: skip


def skipped(execution: ExecutionRequested, *, worker_id: str, now_ms: int) -> Event:
    return Event.of(lifecycle(LifecycleKind.SUCCEEDED, execution, at_ms=now_ms,
                              worker_id=worker_id, detail=SKIPPED_DETAIL))  # fmt: skip


def failed(
    execution: ExecutionRequested, error: ErrorDescription, *, worker_id: str, now_ms: int,
    kind: LifecycleKind = LifecycleKind.FAILED,
) -> Event:  # fmt: skip
    """FAILED (or TIMED_OUT, with ``kind``) carrying the error and the execution."""
    info = ErrorInfo(attempt=execution.attempt, error_type=error.error_type,
                     message=error.message, traceback=error.traceback,
                     retryable=error.retryable, at_ms=now_ms, worker_id=worker_id)  # fmt: skip
    return Event.of(lifecycle(kind, execution, at_ms=now_ms, worker_id=worker_id, error=info,
                              execution=execution))  # fmt: skip


def timed_out(execution: ExecutionRequested, timeout_s: float, *, worker_id: str,
              now_ms: int) -> Event:  # fmt: skip
    return failed(execution, timeout_error(timeout_s), worker_id=worker_id, now_ms=now_ms,
                  kind=LifecycleKind.TIMED_OUT)  # fmt: skip


def cancelled(
    execution: ExecutionRequested, request: CancelRequest, *, worker_id: str, now_ms: int
) -> Event:
    return Event.of(lifecycle(LifecycleKind.CANCELLED, execution, at_ms=now_ms,
                              worker_id=worker_id, requested_by=request.requested_by,
                              detail=request.detail, execution=execution))  # fmt: skip
