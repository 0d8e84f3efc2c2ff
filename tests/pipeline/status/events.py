"""JobLifecycle events as the timers, workers and retry router write them, for status tests.

Every builder of an event returns a JobLifecycle record, as the deserializer gives it, so
the same events feed the pure machine and the real broker; an execution is the dict of its
Avro fields.
"""

from __future__ import annotations

from typing import Any

import msgspec

from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.scheduling import execution_id as make_execution_id
from jobstream._pipeline.serde import Event
from tests.support.jobs import cron_schedule, submitted

T0 = 1_798_000_000_000  # 2026-12-23T04:26:40Z


def spec(*, cron: dict[str, Any] | None = None, owner: str = "tests",
         job_type: str = "data.process") -> dict[str, Any]:  # fmt: skip
    return submitted(cron=cron, owner=owner, job_type=job_type).data["spec"]


def every_minute(**options: Any) -> dict[str, Any]:
    return cron_schedule("* * * * *", **options)


def execution(job_id: str, *, epoch: int, attempt: int = 1, cron: dict[str, Any] | None = None,
              owner: str = "tests") -> dict[str, Any]:  # fmt: skip
    """The ExecutionRequested the timers fired at ``epoch``."""
    return {
        "job_id": job_id, "workflow_id": None,
        "execution_id": make_execution_id(job_id, attempt, epoch), "attempt": attempt,
        "epoch": epoch, "scheduled_at_ms": epoch, "fired_at_ms": epoch, "deadline_ms": None,
        "spec": spec(cron=cron, owner=owner), "idempotency_key": None, "errors": [],
        "parent_results": [], "resume_from": None,
    }  # fmt: skip


def lifecycle(kind: str, job_id: str, *, at_ms: int = T0, **fields: Any) -> JobLifecycle:
    data: dict[str, Any] = {
        "kind": kind, "job_id": job_id, "workflow_id": None, "at_ms": at_ms,
        "job_type": "data.process", "owner": "tests", "attempt": 0, "epoch": 0,
        "execution_id": None, "worker_id": None, "scheduled_at_ms": None, "lateness_ms": None,
        "error": None, "result": None, "result_uri": None, "detail": None, "execution": None,
    }  # fmt: skip
    data.update(fields)
    return msgspec.convert(data, JobLifecycle, from_attributes=True)


def scheduled(job_id: str, *, at_ms: int = T0, due_ms: int | None = None) -> JobLifecycle:
    return lifecycle("SCHEDULED", job_id, at_ms=at_ms, scheduled_at_ms=due_ms or at_ms)


def fired(run: dict[str, Any], *, at_ms: int | None = None) -> JobLifecycle:
    """The timers' FIRED of an execution (no spec: the timers send that to the workers)."""
    return lifecycle("FIRED", run["job_id"], at_ms=at_ms or run["epoch"],
                     scheduled_at_ms=run["scheduled_at_ms"], lateness_ms=0,
                     attempt=run["attempt"], epoch=run["epoch"],
                     execution_id=run["execution_id"])  # fmt: skip


def outcome(kind: str, run: dict[str, Any], *, worker: str = "w1", at_ms: int | None = None,
            **fields: Any) -> JobLifecycle:  # fmt: skip
    """What a worker reports about ``run``: STARTED, HEARTBEAT, SUCCEEDED, FAILED, TIMED_OUT."""
    carried: dict[str, Any] = {}
    if kind in ("STARTED", "FAILED", "TIMED_OUT"):
        carried["execution"] = run
    if kind in ("FAILED", "TIMED_OUT"):
        carried["error"] = {"attempt": run["attempt"], "error_type": "ValueError",
                            "message": "boom", "traceback": None, "retryable": True,
                            "at_ms": at_ms or run["epoch"], "worker_id": worker}  # fmt: skip
    return lifecycle(kind, run["job_id"], at_ms=at_ms or run["epoch"] + 1,
                     attempt=run["attempt"], epoch=run["epoch"],
                     execution_id=run["execution_id"], worker_id=worker,
                     **{**carried, **fields})  # fmt: skip


def retry_scheduled(run: dict[str, Any], *, retry_at_ms: int) -> JobLifecycle:
    return lifecycle("RETRY_SCHEDULED", run["job_id"], at_ms=run["epoch"] + 2,
                     attempt=run["attempt"] + 1, epoch=run["epoch"],
                     execution_id=run["execution_id"], scheduled_at_ms=retry_at_ms)  # fmt: skip


def as_event(data: JobLifecycle) -> Event:
    return Event("JobLifecycle", data)
