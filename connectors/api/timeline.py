"""GET /api/v1/jobs/{id}/events: a job's event timeline, as the views keep it
(connectors/views/timeline.py): every lifecycle event, a run's heartbeats as one entry."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from jobstream._connectors.api.errors import Responses
from jobstream._connectors.api.models import Problem
from jobstream._connectors.api.services import Auth, Svc
from jobstream._connectors.views.query import timeline
from jobstream._connectors.views.timeline import EVENTS_KEPT

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

ERRORS: Responses = {code: {"model": Problem} for code in (401, 404)}


class EventOut(BaseModel):
    """One entry of a job's timeline."""

    kind: str = Field(
        description="The JobLifecycle kind: SCHEDULED, FIRED, STARTED, "
        "HEARTBEAT, SUCCEEDED, FAILED, TIMED_OUT, LOST, CANCELLED, "
        "RETRY_SCHEDULED, DEAD_LETTERED, PAUSED, RESUMED, BLOCKED, WAITING, EXPIRED, DUPLICATE."
    )
    at_ms: int = Field(description="When it happened; a HEARTBEAT entry's first heartbeat.")
    attempt: int | None = Field(
        default=None, description="RETRY_SCHEDULED: the attempt it schedules."
    )
    execution_id: str | None = None
    worker_id: str | None = None
    scheduled_at_ms: int | None = Field(
        None,
        description="FIRED, STARTED, a run's end telling its launch: the instant it was due; "
        "SCHEDULED: the next fire time; RETRY_SCHEDULED: when the retry fires.",
    )
    lateness_ms: int | None = Field(
        None, description="FIRED, STARTED: at_ms minus the instant it was due; a run's end "
        "telling its launch: launched_at_ms minus it (its true start lateness)."
    )
    launched_at_ms: int | None = Field(
        None, description="A run's end (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED): when its "
        "handler really began, by its worker's clock; null when it never began or its "
        "worker did not tell. STARTED commits before the launch, at the claim (a run "
        "claimed ahead: at its due instant)."
    )
    error: str | None = Field(default=None, description="The error's type and message.")
    detail: str | None = None
    by: str | None = Field(default=None, description="Who asked, for an event a command caused.")
    count: int | None = Field(default=None, description="HEARTBEAT: how many the run sent.")
    last_at_ms: int | None = Field(default=None, description="HEARTBEAT: the latest.")


class Timeline(BaseModel):
    job_id: str
    events: list[EventOut] = Field(description=f"Oldest first, the latest {EVENTS_KEPT}.")
    truncated: bool = Field(description=f"True when it holds its most, {EVENTS_KEPT} "
                            "entries: older ones may have been dropped.")  # fmt: skip


@router.get("/{job_id}/events", response_model=Timeline, responses=ERRORS)
def events(job_id: str, who: Auth, svc: Svc) -> Timeline:
    """The job's event timeline, oldest first: every event of it on jobs.events with its
    time, attempt, execution, worker and lateness; a run's heartbeats as one entry with
    their count and the latest. 404 for a job the token does not see."""
    svc.job(job_id, who)
    found = timeline(svc.store, job_id)
    return Timeline(job_id=job_id, events=[EventOut(**entry) for entry in found],
                    truncated=len(found) >= EVENTS_KEPT)  # fmt: skip
