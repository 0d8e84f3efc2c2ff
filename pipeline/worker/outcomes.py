"""The JobLifecycle events a worker emits, shaped as docs/lifecycle.md defines them.

| kind | carries |
|---|---|
| STARTED | ``execution`` (the ExecutionRequested as received), worker, attempt, epoch |
| HEARTBEAT | ``execution_id``, ``epoch``, ``worker_id`` |
| SUCCEEDED | ``result`` (JSON text, at most 256 KB) or ``result_uri`` |
| FAILED | ``error`` (type, message, traceback, ``retryable``), ``execution`` |
| TIMED_OUT | ``error`` (type ``Timeout``, retryable), ``execution`` |
| CANCELLED | ``requested_by``, ``detail`` (the reason), ``execution`` |

Every event names the job, execution, attempt, epoch and worker, and is keyed like every
other record of the job (:func:`pipeline.partitioning.partition_key`), so one partition of
jobs.events holds a job's whole history in order.

Retryability is a property of the error (pipeline/errors.py): an exception whose
``retryable`` attribute is False (NonRetryableError and its subclasses, or any class of
the user's own) fails the job for good; every other exception may be retried.

A run stopped by a cancel (or a record of a cancelled job, never started) is CANCELLED
with who asked and why: not a failure, so the retry router leaves it alone.

A run skipped by the overlap policy is reported as SUCCEEDED with ``result`` null and the
detail :data:`SKIPPED_DETAIL`: nothing failed, and the schedule must not be retried.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

from pipeline.jobs.cancel_request import CancelRequest
from pipeline.lifecycle import LifecycleKind, epoch_of
from pipeline.partitioning import partition_key
from pipeline.serde import Event
from pipeline.worker.results import RoutedResult

MAX_MESSAGE_CHARS = 8 * 1024
MAX_TRACEBACK_CHARS = 32 * 1024
"""Errors travel on in every later ExecutionRequested and RetryScheduled of the job, and
into its dead letter: bounded, so a deep recursion cannot bloat a job's whole history.
The tail of a traceback (where it was raised) is the part kept."""

TIMEOUT_ERROR_TYPE = "Timeout"
SKIPPED_DETAIL = "skipped: previous run still running"


@dataclass(frozen=True, slots=True)
class ErrorDescription:
    """An exception reduced to what ErrorInfo carries; made where it was caught."""

    error_type: str
    message: str
    traceback: str | None
    retryable: bool


def error_type_name(exc: BaseException) -> str:
    """Qualified class name (``myapp.errors.BadInput``); builtins keep their bare name."""
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def is_retryable(exc: BaseException) -> bool:
    return getattr(exc, "retryable", True) is not False


def describe_error(exc: BaseException) -> ErrorDescription:
    text = "".join(traceback.format_exception(exc))
    message = str(exc)
    return ErrorDescription(
        error_type=error_type_name(exc),
        message=message[:MAX_MESSAGE_CHARS],
        traceback=text[-MAX_TRACEBACK_CHARS:],
        retryable=is_retryable(exc),
    )


def timeout_error(timeout_s: float) -> ErrorDescription:
    return ErrorDescription(
        TIMEOUT_ERROR_TYPE, f"the attempt did not finish within {timeout_s:g} s", None, True
    )


def event_key(execution: dict[str, Any]) -> bytes:
    return partition_key(execution["job_id"], execution.get("workflow_id"))


def _lifecycle(
    kind: LifecycleKind, run: dict[str, Any], worker_id: str, now_ms: int, **fields: Any
) -> Event:
    """The fields every worker event shares, from the ExecutionRequested ``run``."""
    spec = run.get("spec") or {}
    return Event("JobLifecycle", {
        "kind": kind, "job_id": run["job_id"], "workflow_id": run.get("workflow_id"),
        "at_ms": now_ms, "job_type": spec.get("job_type", ""), "owner": spec.get("owner", ""),
        "attempt": run.get("attempt", 1), "epoch": epoch_of(run),
        "execution_id": run["execution_id"], "worker_id": worker_id, **fields,
    })  # fmt: skip


def started(execution: dict[str, Any], *, worker_id: str, now_ms: int) -> Event:
    return _lifecycle(LifecycleKind.STARTED, execution, worker_id, now_ms, execution=execution)


def heartbeat(execution: dict[str, Any], *, worker_id: str, now_ms: int) -> Event:
    return _lifecycle(LifecycleKind.HEARTBEAT, execution, worker_id, now_ms)


def succeeded(
    execution: dict[str, Any], routed: RoutedResult, *, worker_id: str, now_ms: int
) -> Event:
    return _lifecycle(LifecycleKind.SUCCEEDED, execution, worker_id, now_ms,
                      result=routed.result, result_uri=routed.result_uri)  # fmt: skip


def skipped(execution: dict[str, Any], *, worker_id: str, now_ms: int) -> Event:
    return _lifecycle(LifecycleKind.SUCCEEDED, execution, worker_id, now_ms, detail=SKIPPED_DETAIL)


def failed(
    execution: dict[str, Any], error: ErrorDescription, *, worker_id: str, now_ms: int,
    kind: LifecycleKind = LifecycleKind.FAILED,
) -> Event:  # fmt: skip
    """FAILED (or TIMED_OUT, with ``kind``) carrying the error and the execution."""
    info = {
        "attempt": execution.get("attempt", 1), "error_type": error.error_type,
        "message": error.message, "traceback": error.traceback, "retryable": error.retryable,
        "at_ms": now_ms, "worker_id": worker_id,
    }  # fmt: skip
    return _lifecycle(kind, execution, worker_id, now_ms, error=info, execution=execution)


def timed_out(
    execution: dict[str, Any], timeout_s: float, *, worker_id: str, now_ms: int
) -> Event:
    return failed(execution, timeout_error(timeout_s), worker_id=worker_id, now_ms=now_ms,
                  kind=LifecycleKind.TIMED_OUT)  # fmt: skip


def cancelled(
    execution: dict[str, Any], request: CancelRequest, *, worker_id: str, now_ms: int
) -> Event:
    return _lifecycle(LifecycleKind.CANCELLED, execution, worker_id, now_ms,
                      requested_by=request.requested_by, detail=request.detail,
                      execution=execution)  # fmt: skip
