"""When a job gives up on time: its deadline (across attempts) and its queue limit.

A job's ``deadline_ms`` (epoch ms) bounds the whole job: no attempt starts at or after
it, the first or a retry. Its ``queue_limit_ms`` bounds how long one attempt stays
QUEUED (fired, not yet taken by a worker). Either ends the job EXPIRED, with an
ErrorInfo whose ``error_type`` is :data:`DEADLINE_EXCEEDED` or
:data:`QUEUE_LIMIT_EXCEEDED` and whose message says which limit passed (and, for the
queue limit, which job type and pool no worker served).

Pure functions of a spec and instants; the components apply them where they decide:

- the timers, before they fire an attempt (:func:`attempt_refusal`);
- the retry router, before it schedules a retry (:func:`retry_refusal`);
- the timers again, capping an attempt's deadline (:func:`attempt_deadline_ms`), and a
  worker its timeout by the same;
- the status processor, holding a QUEUED job's expiry (:func:`queued_expiry_ms`);
- a worker, at claim, refusing what the status processor expires (:func:`claim_refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobstream._pipeline.clock import iso_ms
from jobstream._pipeline.model.records import ErrorInfo, ExecutionRequested, JobSpec

DEADLINE_EXCEEDED = "DeadlineExceeded"
"""The error of a job whose deadline passed before its next attempt could start."""
QUEUE_LIMIT_EXCEEDED = "QueueLimitExceeded"
"""The error of a job no worker took within its queue limit."""
_REASONS = {DEADLINE_EXCEEDED: "deadline", QUEUE_LIMIT_EXCEEDED: "queue_limit"}


def expiry_reason(error: ErrorInfo | None) -> str:
    """The ``reason`` label of an EXPIRED's counter (pipeline/metrics.py): ``deadline``,
    ``queue_limit``, or ``other`` (an expiry of another rule: a wait's timeout)."""
    return "other" if error is None else _REASONS.get(error.error_type, "other")


@dataclass(frozen=True, slots=True)
class Expiry:
    """Why a job expires: the error type and a message a reader of jobs.status understands."""

    error_type: str
    message: str

    def error(self, *, attempt: int, at_ms: int, worker_id: str | None = None) -> ErrorInfo:
        """The ErrorInfo an EXPIRED event carries (not retryable: nothing follows it)."""
        return ErrorInfo(attempt=attempt, error_type=self.error_type, message=self.message,
                         retryable=False, at_ms=at_ms, worker_id=worker_id)  # fmt: skip


def _past_deadline(spec: JobSpec, start_ms: int, what: str) -> Expiry | None:
    deadline = spec.deadline_ms
    if deadline is None or start_ms < deadline:
        return None
    return Expiry(DEADLINE_EXCEEDED,
                  f"{what} at {iso_ms(start_ms)}, at or past the job's deadline "
                  f"{iso_ms(deadline)}")  # fmt: skip


def attempt_refusal(spec: JobSpec, *, attempt: int, due_ms: int, now_ms: int) -> Expiry | None:
    """Why attempt ``attempt``, due at ``due_ms`` and fired at ``now_ms``, must not start;
    None when it may. It would start at the later of the two."""
    return _past_deadline(spec, max(due_ms, now_ms), f"attempt {attempt} would start")


def retry_refusal(spec: JobSpec, *, attempt: int, retry_at_ms: int,
                  last_error: ErrorInfo) -> Expiry | None:  # fmt: skip
    """Why the retry ``attempt`` at ``retry_at_ms`` is not scheduled (it would start at or
    past the deadline); None when it may be. The message keeps the failure that asked for
    it, which the EXPIRED replaces in the job's ``last_error``."""
    expiry = _past_deadline(spec, retry_at_ms, f"retry (attempt {attempt}) would start")
    if expiry is None:
        return None
    failed = f"attempt {attempt - 1} failed ({last_error.error_type}: {last_error.message})"
    return Expiry(expiry.error_type, f"{failed}; its {expiry.message}")


def attempt_deadline_ms(spec: JobSpec, *, start_ms: int, timeout_ms: int | None) -> int | None:
    """When an attempt starting at ``start_ms`` must end: its timeout's end, but no later
    than the job's deadline; None when neither bounds it."""
    ends = [end for end in (None if not timeout_ms else start_ms + timeout_ms,
                            spec.deadline_ms) if end is not None]  # fmt: skip
    return min(ends, default=None)


def capped_timeout_s(spec: JobSpec, *, start_ms: int, timeout_s: float) -> float:
    """An attempt's timeout, cut so that a run starting at ``start_ms`` ends by the job's
    deadline (at least a millisecond: a worker refuses to start one at or past it)."""
    if spec.deadline_ms is None:
        return timeout_s
    return min(timeout_s, max(spec.deadline_ms - start_ms, 1) / 1000)


def queued_expiry_ms(spec_deadline_ms: int | None, queue_limit_ms: int | None, *,
                     queued_at_ms: int, due_ms: int | None) -> int | None:  # fmt: skip
    """When a QUEUED attempt expires: its queue limit counted from when it was queued (a
    run fired ahead of its due instant counts from that instant), or the job's deadline,
    whichever comes first; None without either."""
    ends = [spec_deadline_ms]
    if queue_limit_ms is not None:
        ends.append(max(queued_at_ms, due_ms or 0) + queue_limit_ms)
    return min((end for end in ends if end is not None), default=None)


def queued_refusal(
    spec_deadline_ms: int | None,
    queue_limit_ms: int | None,
    *,
    job_type: str,
    pool: str | None,
    attempt: int,
    now_ms: int,
) -> Expiry:
    """Why a QUEUED attempt expired at ``now_ms``: its deadline, if that has passed, else
    its queue limit; the message names the job type and pool that no worker served."""
    served = f"no worker of type {job_type} ({'pool ' + pool if pool else 'any pool'})"
    if spec_deadline_ms is not None and now_ms >= spec_deadline_ms:
        return Expiry(DEADLINE_EXCEEDED,
                      f"{served} started attempt {attempt} before the job's deadline "
                      f"{iso_ms(spec_deadline_ms)}")  # fmt: skip
    limit = f"{queue_limit_ms / 1000:g} s" if queue_limit_ms is not None else "its limit"
    return Expiry(
        QUEUE_LIMIT_EXCEEDED, f"{served} took attempt {attempt} within its queue limit of {limit}"
    )


def claim_refusal(execution: ExecutionRequested, start_ms: int) -> str | None:
    """Why a worker must not start ``execution`` at ``start_ms``: the job's deadline or the
    attempt's queue limit has passed, and the status processor expires (or has expired)
    the job; None when it may start."""
    spec = execution.spec
    expires = queued_expiry_ms(spec.deadline_ms, spec.queue_limit_ms,
                               queued_at_ms=execution.fired_at_ms,
                               due_ms=execution.scheduled_at_ms)  # fmt: skip
    if expires is None or start_ms < expires:
        return None
    if spec.deadline_ms is not None and start_ms >= spec.deadline_ms:
        return "past the job's deadline"
    return "past its queue limit"
