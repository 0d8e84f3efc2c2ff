"""/api/v1/workflows/{id}/pause|resume|trigger and PATCH /api/v1/workflows/{id}: the
commands of a recurring workflow, as /api/v1/jobs/{id}/... are a recurring job's.

The workflow is found as its cancel finds it (connectors/api/workflows.py): the token's
owner's, or for an admin the one ``?owner=`` names when two owners use the id; 404 when
the views keep no recurring workflow of that id not cancelled. Then a bad schedule or step
is 422 naming the field (``cron.expression``, ``steps.<i>.<field>``); what its status shows to be
pointless (a trigger of a paused one) is 409, by the timers' own rule
(:func:`jobstream._pipeline.workflows.schedule_commands.workflow_refusal`). The answer is
202 once the command is on jobs.intake; the workflow's status is the job ``status_id``
(GET /api/v1/jobs/{status_id}).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from jobstream._connectors.api.commands import requester
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.models import CommandIn, Problem
from jobstream._connectors.api.services import Auth, Svc
from jobstream._connectors.api.workflows import OwnerQuery, recurring_owner
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.serde import Event
from jobstream._pipeline.workflows import schedule_commands
from jobstream._pipeline.workflows.ids import schedule_job_id

router = APIRouter(prefix="/api/v1/workflows", tags=["workflows"])

ERRORS: Responses = {code: {"model": Problem} for code in (401, 404, 409, 422, 503)}

Build = Callable[[str, str, dict[str, Any]], Event]
"""``(owner, workflow id, actor fields) -> the command``."""


class WorkflowCommandOut(BaseModel):
    workflow_id: str
    owner: str
    command: str
    status_id: str = Field(description="The job id of the workflow's own status "
                           "(GET /api/v1/jobs/{status_id}).")  # fmt: skip


class WorkflowUpdateIn(CommandIn):
    """A recurring workflow's new schedule and/or new steps, for the runs after it."""

    cron: str | dict[str, Any] | None = Field(
        None,
        description="A cron expression (UTC) or a CronSchedule object; its runs do not "
        "overlap unless it says overlap: ALLOW.",
    )
    steps: list[dict[str, Any]] | None = Field(
        None, description="The new steps, as POST /api/v1/workflows takes them."
    )


async def _command(svc: Svc, who: Auth, workflow_id: str, owner: str | None, name: str,
                   build: Build, reason: str | None) -> WorkflowCommandOut:  # fmt: skip
    if reason is not None:
        rules.field_check("reason", rules.reason, reason)
    found = recurring_owner(svc, who, workflow_id, owner)
    if found is None:
        raise ApiError(404, f"recurring workflow {workflow_id} not found", "workflow_id")
    event = build(found, workflow_id, {"requested_by": requester(who), "reason": reason})
    status_id = schedule_job_id(found, workflow_id)
    status = svc.store.doc(status_id)
    paused = status is not None and status["state"] == JobState.PAUSED
    refusal = schedule_commands.workflow_refusal(name, workflow_id, paused=paused)
    if refusal is not None:
        raise ApiError(409, refusal, "workflow_id")
    await svc.send([event])
    return WorkflowCommandOut(workflow_id=workflow_id, owner=found, command=name,
                              status_id=status_id)  # fmt: skip


@router.post("/{workflow_id}/pause", status_code=202, response_model=WorkflowCommandOut,
             responses=ERRORS)  # fmt: skip
async def pause(workflow_id: str, who: Auth, svc: Svc, body: CommandIn | None = None,
                owner: OwnerQuery = None) -> WorkflowCommandOut:  # fmt: skip
    """Start no run of a recurring workflow until it is resumed; runs started go on."""
    return await _command(svc, who, workflow_id, owner, "pause", lambda o, w, asked: (
        schedule_commands.pause_workflow_event(o, w, now_ms=now_ms(), **asked)),
        body.reason if body else None)  # fmt: skip


@router.post("/{workflow_id}/resume", status_code=202, response_model=WorkflowCommandOut,
             responses=ERRORS)  # fmt: skip
async def resume(workflow_id: str, who: Auth, svc: Svc, body: CommandIn | None = None,
                 owner: OwnerQuery = None) -> WorkflowCommandOut:  # fmt: skip
    """Let a paused recurring workflow run again from its next time after now (the times
    missed while paused start no run)."""
    return await _command(svc, who, workflow_id, owner, "resume", lambda o, w, asked: (
        schedule_commands.resume_workflow_event(o, w, now_ms=now_ms(), **asked)),
        body.reason if body else None)  # fmt: skip


@router.post("/{workflow_id}/trigger", status_code=202, response_model=WorkflowCommandOut,
             responses=ERRORS)  # fmt: skip
async def trigger(workflow_id: str, who: Auth, svc: Svc, body: CommandIn | None = None,
                  owner: OwnerQuery = None) -> WorkflowCommandOut:  # fmt: skip
    """Start a run now; the schedule keeps its times (with overlap SKIP, no run while the
    previous one runs). 409 while paused."""
    return await _command(svc, who, workflow_id, owner, "trigger", lambda o, w, asked: (
        schedule_commands.trigger_workflow_event(o, w, now_ms=now_ms(), **asked)),
        body.reason if body else None)  # fmt: skip


@router.patch("/{workflow_id}", status_code=202, response_model=WorkflowCommandOut,
              responses=ERRORS)  # fmt: skip
async def update(workflow_id: str, body: WorkflowUpdateIn, who: Auth, svc: Svc,
                 owner: OwnerQuery = None) -> WorkflowCommandOut:  # fmt: skip
    """Give a recurring workflow a new schedule and/or new steps, for the runs that start
    after it (a paused one stays paused)."""

    def build(found: str, workflow: str, asked: dict[str, Any]) -> Event:
        return schedule_commands.update_workflow_event(found, workflow, cron=body.cron,
                                                       steps=body.steps, now_ms=now_ms(),
                                                       **asked)  # fmt: skip

    return await _command(svc, who, workflow_id, owner, "update", build, body.reason)
