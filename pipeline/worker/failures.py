"""A failed attempt reduced to what ErrorInfo carries, wherever the failure was seen.

Kept apart from outcomes.py, which builds whole events and so imports the Avro serde (a
second and 50 MB): a handler's child process (pipeline/worker/child.py) describes the
exceptions it catches with these functions and imports nothing heavier.

Retryability is a property of the error (pipeline/errors.py): an exception whose
``retryable`` attribute is False (NonRetryableError and its subclasses, or any class of
the user's own) fails the job for good; every other exception may be retried. Two kinds
of failure have no exception behind them and a type name of their own: ``Timeout`` (the
attempt ran past its deadline) and ``WorkerCrashed`` (the process running the handler
died under it); both are retryable.
"""

from __future__ import annotations

import signal
import traceback
from dataclasses import dataclass

from jobstream._pipeline.model.lifecycle import WORKER_CRASHED

MAX_MESSAGE_CHARS = 8 * 1024
MAX_TRACEBACK_CHARS = 32 * 1024
"""Errors travel on in every later ExecutionRequested and RetryScheduled of the job, and
into its dead letter: bounded, so a deep recursion cannot bloat a job's whole history.
The tail of a traceback (where it was raised) is the part kept."""

TIMEOUT_ERROR_TYPE = "Timeout"
CRASHED_ERROR_TYPE = WORKER_CRASHED


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


def crashed_error(returncode: int) -> ErrorDescription:
    """The process running the handler ended mid-run with ``returncode`` (as subprocess
    gives it: ``-N`` for a signal N). Retryable: a crash (a segfault in native code, the
    out-of-memory killer's SIGKILL, an ``os._exit``) may not happen again."""
    return ErrorDescription(
        CRASHED_ERROR_TYPE, f"the process running the handler {how_it_ended(returncode)}",
        None, True,
    )  # fmt: skip


def how_it_ended(returncode: int) -> str:
    """``killed by signal SIGKILL`` or ``exited with code 3``."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    return f"was killed by signal {name}"
