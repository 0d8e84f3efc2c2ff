"""/api/v1/jobs/{id}/cancel|trigger|pause|resume and PATCH /api/v1/jobs/{id}: commands.

A command goes to jobs.intake, keyed like the job, and the timers of its partition apply
it in their transaction; the answer is 202 once the broker has it. What the views already
show to be pointless (a job that ended, a pause of a one-off job, a move of one that
fired) is refused with 409; what only the timers know (a one-off job that fired a moment
ago) they ignore. A cancel applies in every state but the ended ones: a job that has
fired (QUEUED, RUNNING) is cancelled where a worker holds it, through jobs.control
(docs/lifecycle.md, "Cancelling a run"), and ends CANCELLED within a second or two; a
recurring job's cancel ends its schedule and its run under way. Every command records
who asked (:func:`requester`) and, from its optional body, why (``reason``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from fastapi import APIRouter

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.feed import Doc
from jobstream._connectors.api.models import CommandIn, CommandOut, Problem, ScheduleIn
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views import SUBMITTED
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model import commands, rules
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES, JobState
from jobstream._pipeline.serde import Event

router = APIRouter(prefix="/api/v1/jobs", tags=["commands"])

ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 404, 409, 413, 422, 503)
}
PENDING = frozenset({JobState.SCHEDULED.value, SUBMITTED})
"""A one-off job's states before it fires: the only ones it can be triggered or changed in."""

class Actor(TypedDict):
    """Who asks for a command, and why: the fields every command builder takes."""

    requested_by: str
    reason: str | None


Build = Callable[[str, str | None, Actor], Event]
"""``(job id, workflow id, actor) -> the command``."""


def recurring(doc: Doc) -> bool | None:
    """Whether the job has a cron schedule; None when the view has not read its submission."""
    if not doc.get("submitted"):
        return None
    return (doc.get("schedule") or {}).get("cron") is not None


def refusal(name: str, doc: Doc) -> str | None:
    """Why command ``name`` cannot apply to the job ``doc`` (409), or None: the model's rule
    (:func:`jobstream._pipeline.model.commands.command_refusal`, the one the timers apply)."""
    paused = doc["state"] == JobState.PAUSED
    return _asked(doc, lambda facts: commands.command_refusal(name, **facts, paused=paused))


def update_refusal(doc: Doc, body: ScheduleIn) -> str | None:
    """Why PATCH ``body`` cannot apply to the job ``doc`` (409), or None: the model's rule
    (:func:`jobstream._pipeline.model.commands.update_refusal`, the one the timers apply)."""
    cron, run_at = body.cron is not None, body.run_at_ms is not None
    return _asked(doc, lambda facts: commands.update_refusal(**facts, cron=cron, run_at=run_at))


def _asked(doc: Doc, rule: Callable[[dict[str, Any]], str | None]) -> str | None:
    """A job that has ended takes no command; else what ``rule`` says of the facts its view
    shows (a refusal of a job that has fired names the state it is in)."""
    state, job_id = doc["state"], doc["job_id"]
    if state in TERMINAL_STATES:
        return f"job {job_id} has ended ({state})"
    refused = rule({"job_id": job_id, "recurring": recurring(doc), "pending": state in PENDING,
                    "blocked": state == JobState.BLOCKED})  # fmt: skip
    if refused is not None and refused.endswith("has fired already"):
        return f"{refused} ({state})"
    return refused


def requester(who: Principal) -> str:
    """Who a command over HTTP names (:attr:`Principal.actor`)."""
    return who.actor


async def _command(svc: Services, who: Principal, job_id: str, name: str, build: Build,
                   body: CommandIn | None,
                   refuse: Callable[[Doc], str | None] | None = None,
                   ) -> CommandOut:  # fmt: skip
    """Send command ``name`` built by ``build(job id, workflow id, actor fields)`` unless
    the job's view shows it pointless (409); a bad reason is 422 first."""
    if body is not None and body.reason is not None:
        rules.field_check("reason", rules.reason, body.reason)
    doc = svc.job(job_id, who)
    reason = refusal(name, doc) if refuse is None else refuse(doc)
    if reason is not None:
        raise ApiError(409, reason, "job_id")
    asked = Actor(requested_by=requester(who), reason=body.reason if body else None)
    await svc.send([build(job_id, doc.get("workflow_id"), asked)])
    return CommandOut(job_id=job_id, command=name)


@router.post("/{job_id}/cancel", status_code=202, response_model=CommandOut, responses=ERRORS)
async def cancel(job_id: str, who: Auth, svc: Svc, body: CommandIn | None = None) -> CommandOut:
    """Cancel a job: its pending fire (every later run of a schedule), and a run of it
    queued or running, which ends CANCELLED within a second or two."""
    return await _command(svc, who, job_id, "cancel", lambda j, w, asked: commands.cancel_event(
        j, w, asked["reason"], now_ms=now_ms(), requested_by=asked["requested_by"]), body)


@router.post("/{job_id}/trigger", status_code=202, response_model=CommandOut, responses=ERRORS)
async def trigger(job_id: str, who: Auth, svc: Svc, body: CommandIn | None = None) -> CommandOut:
    """Run a scheduled job now: a one-off job fires now instead of at its time; a recurring
    job runs once more and keeps its schedule (the run counts towards max_runs)."""
    return await _command(svc, who, job_id, "trigger", lambda j, w, asked: commands.trigger_event(
        j, w, now_ms=now_ms(), **asked), body)


@router.post("/{job_id}/pause", status_code=202, response_model=CommandOut, responses=ERRORS)
async def pause(job_id: str, who: Auth, svc: Svc, body: CommandIn | None = None) -> CommandOut:
    """Stop a recurring job from firing until resumed."""
    return await _command(svc, who, job_id, "pause", lambda j, w, asked: commands.pause_event(
        j, w, now_ms=now_ms(), **asked), body)


@router.post("/{job_id}/resume", status_code=202, response_model=CommandOut, responses=ERRORS)
async def resume(job_id: str, who: Auth, svc: Svc, body: CommandIn | None = None) -> CommandOut:
    """Let a paused recurring job fire again."""
    return await _command(svc, who, job_id, "resume", lambda j, w, asked: commands.resume_event(
        j, w, now_ms=now_ms(), **asked), body)


@router.patch("/{job_id}", status_code=202, response_model=CommandOut, responses=ERRORS)
async def update(job_id: str, body: ScheduleIn, who: Auth, svc: Svc) -> CommandOut:
    """Give a recurring job a new schedule (the run count stays; a paused job stays paused
    and follows it once resumed), or move a one-off job that has not fired to a new run
    time; new parameters with either, or alone."""
    # Checked before the job is looked up, by the model's rules: a bad schedule or run time,
    # or none of them, is 422 naming its field.
    commands.update_schedule_event(job_id, body.cron, body.params, run_at=body.run_at_ms,
                                   now_ms=now_ms(), reason=body.reason)  # fmt: skip
    return await _command(svc, who, job_id, "update", lambda j, w, asked: (
        commands.update_schedule_event(j, body.cron, body.params, w, run_at=body.run_at_ms,
                                       now_ms=now_ms(), **asked)
    ), body, lambda doc: update_refusal(doc, body))  # fmt: skip
