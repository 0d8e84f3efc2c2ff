"""Failures as a worker or the status processor writes them, and a reader of whole topics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.records import typed
from jobstream._pipeline.scheduling import execution_id, new_job_id
from jobstream._pipeline.serde import Event


def error_info(attempt: int, error_type: str = "ConnectionError", *, retryable: bool = True,
               at_ms: int | None = None) -> dict[str, Any]:  # fmt: skip
    return {"attempt": attempt, "error_type": error_type, "message": f"{error_type} on {attempt}",
            "traceback": f"Traceback (most recent call last):\n  attempt {attempt}\n{error_type}",
            "retryable": retryable, "at_ms": now_ms() if at_ms is None else at_ms,
            "worker_id": "worker-1"}  # fmt: skip


def retry_policy(**fields: Any) -> dict[str, Any]:
    """A RetryPolicy record: the schema's defaults, with ``fields`` changed."""
    return {"max_attempts": 3, "initial_backoff_ms": 1000, "backoff_coefficient": 2.0,
            "max_backoff_ms": 300_000, "jitter": 0.1, "non_retryable_errors": [],
            **fields}  # fmt: skip


def execution(*, job_id: str | None = None, attempt: int = 1, fired_at_ms: int | None = None,
              errors: Iterable[dict[str, Any]] = (), retry: dict[str, Any] | None = None,
              job_type: str = "data.process", owner: str = "tests",
              idempotency_key: str | None = None) -> dict[str, Any]:  # fmt: skip
    """An ExecutionRequested record, as the timers fire it."""
    job_id = job_id or new_job_id()
    fired = now_ms() if fired_at_ms is None else fired_at_ms
    return {
        "job_id": job_id, "workflow_id": None,
        "execution_id": execution_id(job_id, attempt, fired), "attempt": attempt, "epoch": fired,
        "scheduled_at_ms": fired, "fired_at_ms": fired, "deadline_ms": None,
        "spec": {"job_type": job_type, "owner": owner, "params": '{"input": 1}',
                 "priority": "NORMAL", "run_at_ms": None, "cron": None, "depends_on": [],
                 "retry": retry, "timeout_ms": None, "labels": {},
                 "on_parent_failure": "CANCEL", "pool": None,
                 "deadline_ms": None, "queue_limit_ms": None, "job_keys": None},
        "idempotency_key": idempotency_key, "errors": list(errors), "parent_results": [],
    }  # fmt: skip


def failure(kind: str, run: dict[str, Any] | None, *, at_ms: int | None = None,
            error: dict[str, Any] | None = None, job_id: str | None = None) -> Event:  # fmt: skip
    """A FAILED, TIMED_OUT or LOST JobLifecycle of ``run`` (None: one without its execution),
    as the router reads it: typed."""
    at = now_ms() if at_ms is None else at_ms
    return _typed("JobLifecycle", {
        "kind": kind, "job_id": run["job_id"] if run else (job_id or new_job_id()),
        "workflow_id": None, "at_ms": at,
        "job_type": run["spec"]["job_type"] if run else "", "owner": "tests",
        "attempt": run["attempt"] if run else 0, "epoch": run["epoch"] if run else 0,
        "execution_id": run["execution_id"] if run else None, "worker_id": "worker-1",
        "error": error, "execution": run,
    })  # fmt: skip


def succeeded(run: dict[str, Any]) -> Event:
    return _typed("JobLifecycle", {
        "kind": "SUCCEEDED", "job_id": run["job_id"], "at_ms": now_ms(),
        "attempt": run["attempt"], "epoch": run["epoch"], "execution_id": run["execution_id"],
        "result": "{}",
    })  # fmt: skip


def _typed(name: str, data: dict[str, Any]) -> Event:
    return Event.of(typed(name, data))
