"""Job events as any producer would write them, for tests."""

from __future__ import annotations

import time
from typing import Any

import orjson

from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.serde import Event


def _now() -> int:
    return time.time_ns() // 1_000_000


def cron_schedule(expression: str, **options: Any) -> dict[str, Any]:
    return {
        "expression": expression,
        "timezone": "UTC",
        "start_at_ms": None,
        "end_at_ms": None,
        "max_runs": None,
        "skipped_hour": "RUN_AFTER",
        "repeated_hour": "FIRST",
        "misfire": "RUN_ONCE",
        "catchup_window_ms": 3_600_000,
        "overlap": "ALLOW",
        "jitter_ms": 0,
        **options,
    }


def submitted(
    *,
    run_at_ms: int | None = None,
    cron: dict[str, Any] | None = None,
    job_type: str = "data.process",
    owner: str = "tests",
    priority: str = "NORMAL",
    job_id: str | None = None,
    idempotency_key: str | None = None,
    now_ms: int | None = None,
    params: dict[str, Any] | None = None,
) -> Event:
    return Event(
        "JobSubmitted",
        {
            "job_id": job_id
            or (idempotent_job_id(owner, idempotency_key) if idempotency_key else new_job_id()),
            "idempotency_key": idempotency_key,
            "workflow_id": None,
            "submitted_at_ms": _now() if now_ms is None else now_ms,
            "spec": {
                "job_type": job_type,
                "owner": owner,
                "params": orjson.dumps(params or {}).decode(),
                "priority": priority,
                "run_at_ms": run_at_ms,
                "cron": cron,
                "depends_on": [],
                "retry": None,
                "timeout_ms": None,
                "labels": {},
                "on_parent_failure": "CANCEL",
                "pool": None,
                "deadline_ms": None,
                "queue_limit_ms": None,
                "job_keys": None,
            },
        },
    )


def cancelled(job_id: str, now_ms: int | None = None) -> Event:
    return Event(
        "JobCancelled",
        {
            "job_id": job_id,
            "workflow_id": None,
            "requested_at_ms": _now() if now_ms is None else now_ms,
            "reason": "test",
        },
    )


def schedule_changed(job_id: str, action: str, now_ms: int | None = None, **fields: Any) -> Event:
    return Event(
        "ScheduleChanged",
        {
            "job_id": job_id,
            "workflow_id": None,
            "requested_at_ms": _now() if now_ms is None else now_ms,
            "action": action,
            "cron": None,
            "params": None,
            **fields,
        },
    )
