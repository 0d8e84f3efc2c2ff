"""GET /api/v1/schedules: the recurring jobs and recurring workflows not ended, newest
first, with their schedule, next runs and last runs (the dashboard's schedules page).

The listing is the views' (connectors/views/schedules.py): an owner token sees its own
owner's, an admin token every owner's (owner by owner) or the one ``owner`` names. The
next runs are computed from each cron schedule, as the timers compute them
(pipeline/scheduling/cron.py); a paused job's are those it would fire once resumed. The
last runs of a recurring job are the outcomes its event timeline holds; a recurring
workflow's, its latest runs (workflows of their own) and the worst outcome of their steps.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from jobstream._connectors.api.errors import Responses
from jobstream._connectors.api.models import Problem
from jobstream._connectors.api.services import Auth, Svc
from jobstream._connectors.views.query import timeline
from jobstream._connectors.views.schedules import Schedule, list_schedules, next_runs, workflow_runs
from jobstream._connectors.views.timeline import last_runs
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.workflows.ids import schedule_job_id

router = APIRouter(prefix="/api/v1", tags=["schedules"])

ERRORS: Responses = {code: {"model": Problem} for code in (401, 422)}
NEXT_RUNS = 5
LAST_RUNS = 5


class RunOut(BaseModel):
    """One of a schedule's last runs."""

    id: str = Field(description="A job's execution id, or the run's workflow id.")
    attempt: int | None = Field(default=None, description="A job's run: its attempt.")
    outcome: str = Field(description="SUCCEEDED, FAILED, TIMED_OUT, LOST, CANCELLED; for a "
                         "workflow's run the worst of its steps (DEAD_LETTERED, CANCELLED, "
                         "SUCCEEDED) or RUNNING.")  # fmt: skip
    at_ms: int = Field(description="When it ended (a job's run), or started (a workflow's).")
    ended_at_ms: int | None = None
    worker_id: str | None = None
    error: str | None = None


class ScheduleOut(BaseModel):
    kind: str = Field(description="job or workflow.")
    id: str = Field(description="The recurring job's id, or the recurring workflow's id.")
    owner: str
    job_type: str | None = Field(default=None, description="A job's type.")
    steps: list[str] = Field(default_factory=list, description="A workflow's step names.")
    expression: str = Field(description="The cron expression.")
    timezone: str = Field(description="The IANA time zone it is read in.")
    cron: dict[str, Any] = Field(description="The whole CronSchedule.")
    status_id: str | None = Field(default=None, description="A workflow's: the job id of its "
                                  "own status (GET /api/v1/jobs/{status_id}).")  # fmt: skip
    state: str = Field(description="Its state (a workflow's: SCHEDULED, PAUSED or CANCELLED, "
                       "SCHEDULED until its status is in the views).")  # fmt: skip
    paused: bool
    pausable: bool = Field(description="Whether pause and resume apply (always: recurring "
                           "jobs and recurring workflows).")  # fmt: skip
    created_at_ms: int
    runs: int | None = Field(default=None, description="Runs so far (a workflow's: runs "
                             "ended).")  # fmt: skip
    next_fire_at_ms: int | None = Field(
        default=None, description="Its next fire (a workflow's: next run), as the timers hold it."
    )
    next_runs_ms: list[int] = Field(
        description=f"The next {NEXT_RUNS} fire instants computed "
        "from the schedule (fewer when it ends first)."
    )
    last_runs: list[RunOut] = Field(description=f"The latest {LAST_RUNS}, newest first.")


class SchedulePageOut(BaseModel):
    items: list[ScheduleOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page; null: done.")


@router.get("/schedules", response_model=SchedulePageOut, responses=ERRORS)
def schedules(who: Auth, svc: Svc, owner: str | None = None,
              limit: int = Query(50, ge=1, le=200),
              cursor: str | None = None) -> SchedulePageOut:  # fmt: skip
    """Recurring jobs and recurring workflows not ended, newest first (an admin's: owner by
    owner), each with its cron expression and time zone, whether it is paused, its next
    runs and its last runs."""
    if not who.admin:
        if owner is not None and owner != who.owner:
            return SchedulePageOut(items=[], next_cursor=None)
        owner = who.owner
    page = list_schedules(svc.store, owner, limit=limit, cursor=cursor)
    now = now_ms()
    return SchedulePageOut(items=[_shown(svc, item, now) for item in page.items],
                           next_cursor=page.next_cursor)  # fmt: skip


def _shown(svc: Svc, item: Schedule, now: int) -> ScheduleOut:
    held = item.held
    if item.kind == "job":
        cron = held["schedule"]["cron"]
        following = held.get("next_fire_at_ms")
        after = now if following is None else min(now, int(following) - 1)
        runs = [RunOut(id=run["execution_id"], attempt=run["attempt"], outcome=run["outcome"],
                       at_ms=run["at_ms"], ended_at_ms=run["at_ms"], worker_id=run["worker_id"],
                       error=run["error"])
                for run in last_runs(timeline(svc.store, held["job_id"]), LAST_RUNS)]  # fmt: skip
        return ScheduleOut(
            kind="job", id=held["job_id"], owner=item.owner, job_type=held["job_type"],
            expression=cron["expression"], timezone=cron.get("timezone") or "UTC", cron=cron,
            state=held["state"], paused=held["state"] == JobState.PAUSED, pausable=True,
            created_at_ms=held["created_at_ms"], runs=held["runs"], next_fire_at_ms=following,
            next_runs_ms=next_runs(cron, after_ms=after, schedule_id=held["job_id"],
                                   runs=held["runs"], count=NEXT_RUNS),
            last_runs=runs,
        )  # fmt: skip
    cron = held["cron"]
    workflow_id = held["workflow_id"]
    runs = [RunOut(id=run["run_id"], outcome=run["outcome"], at_ms=run["started_at_ms"],
                   ended_at_ms=run["ended_at_ms"])
            for run in workflow_runs(svc.store, item.owner, workflow_id, LAST_RUNS)]  # fmt: skip
    status_id = schedule_job_id(item.owner, workflow_id)
    status = svc.store.doc(status_id) or {}  # its own status, once the timers have sent it
    state = status.get("state") or JobState.SCHEDULED
    following = status.get("next_fire_at_ms")
    after = now if following is None else min(now, int(following) - 1)
    return ScheduleOut(
        kind="workflow", id=workflow_id, owner=item.owner, status_id=status_id,
        steps=[step["name"] for step in held["steps"]], expression=cron["expression"],
        timezone=cron.get("timezone") or "UTC", cron=cron, state=state,
        paused=state == JobState.PAUSED, pausable=True, created_at_ms=held["created_at_ms"],
        runs=status.get("runs"), next_fire_at_ms=following,
        next_runs_ms=next_runs(cron, after_ms=after, schedule_id=workflow_id, count=NEXT_RUNS),
        last_runs=runs,
    )  # fmt: skip
