"""/api/v1/jobs: submit (one or a batch), list, read, history, and the job commands."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Response

from connectors.api.auth import Principal
from connectors.api.errors import ApiError
from connectors.api.models import (
    Accepted,
    BatchAccepted,
    BatchIn,
    CancelIn,
    CommandOut,
    Executions,
    JobIn,
    JobOut,
    JobPage,
    Problem,
)
from connectors.api.producer import NotAcknowledged
from connectors.api.services import Auth, Services, Svc
from connectors.views import SUBMITTED, executions, list_jobs
from connectors.views.fold import apply_submitted
from connectors.views.query import params as stored_params
from pipeline.clock import now_ms
from pipeline.errors import ValidationError
from pipeline.jobs import commands
from pipeline.jobs.model import JobRequest
from pipeline.lifecycle import TERMINAL_STATES, JobState
from pipeline.serde import Event

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem} for code in (401, 404, 409, 413, 422, 503)
}
STATES = {state.value for state in JobState} | {SUBMITTED}


def _request(job: JobIn, who: Principal, header_key: str | None, path: str = "") -> JobRequest:
    """The JobRequest of a body, owned as the token allows; ValidationError otherwise."""
    fields = job.model_dump(exclude_unset=True)
    owner = fields.pop("owner", None)
    if who.admin:
        if owner is None:
            raise ValidationError(f"{path}spec.owner", "is required with an admin token")
    elif owner is not None and owner != who.owner:
        raise ValidationError(f"{path}spec.owner", "must be the token's own owner (or left out)")
    if header_key is not None:
        if fields.get("idempotency_key", header_key) != header_key:
            raise ValidationError(f"{path}idempotency_key",
                                  "differs from the Idempotency-Key header")  # fmt: skip
        fields["idempotency_key"] = header_key
    try:
        return JobRequest(owner=owner or who.owner or "", **fields)
    except ValidationError as exc:
        raise ValidationError(path + exc.field, exc.message) from None


async def _send(svc: Services, events: list[Event]) -> None:
    try:
        await svc.intake.send(events)
    except NotAcknowledged as exc:
        raise ApiError(503, f"the broker did not take the submission: {exc}") from exc


def _accept(svc: Services, event: Event) -> dict[str, Any]:
    doc = apply_submitted(None, event.data)
    svc.pending.add(doc)
    return doc


@router.post("", status_code=201, response_model=Accepted, responses=ERRORS)
async def submit(job: JobIn, response: Response, who: Auth, svc: Svc,
                 idempotency_key: Annotated[str | None, Header()] = None) -> Accepted:  # fmt: skip
    """Submit one job: 201 with its id and Location. With an idempotency key naming a job
    that exists, 200 with that job (nothing is sent again)."""
    request = _request(job, who, idempotency_key)
    event = request.to_event(now_ms())
    job_id = event.data["job_id"]
    response.headers["Location"] = f"/api/v1/jobs/{job_id}"
    if request.idempotency_key is not None:
        known = svc.store.doc(job_id) or svc.pending.get(job_id)
        if known is not None:
            response.status_code = 200
            return Accepted(job_id=job_id, state=known["state"], created=False)
    await _send(svc, [event])
    _accept(svc, event)
    return Accepted(job_id=job_id, state=SUBMITTED, created=True)


@router.post("/batch", status_code=201, response_model=BatchAccepted, responses=ERRORS)
async def submit_batch(batch: BatchIn, who: Auth, svc: Svc) -> BatchAccepted:
    """Submit many jobs: every one is checked first (one bad job: none is sent, 422 names
    it as ``jobs[i].<field>``), then all are sent and acknowledged together."""
    if not batch.jobs:
        raise ApiError(422, "jobs: at least one job is required", "jobs")
    if len(batch.jobs) > svc.api.api_max_batch_jobs:
        raise ApiError(413, f"at most {svc.api.api_max_batch_jobs} jobs in a batch", "jobs")
    now = now_ms()
    events = []
    for i, job in enumerate(batch.jobs):
        request = _request(job, who, None, f"jobs[{i}].")
        try:
            events.append(request.to_event(now))
        except ValidationError as exc:
            raise ValidationError(f"jobs[{i}].{exc.field}", exc.message) from None
    await _send(svc, events)
    for event in events:
        _accept(svc, event)
    return BatchAccepted(job_ids=[event.data["job_id"] for event in events])


@router.get("", response_model=JobPage, responses=ERRORS)
def list_(who: Auth, svc: Svc,
          owner: str | None = None,
          state: str | None = None,
          type: str | None = Query(None, description="Job type."),
          label: str | None = Query(None, description="name=value"),
          limit: int = Query(50, ge=1, le=500),
          cursor: str | None = None) -> JobPage:  # fmt: skip
    """Jobs newest first, filtered; an owner token sees its own jobs only."""
    if state is not None and state not in STATES:
        raise ValidationError("state", f"must be one of {', '.join(sorted(STATES))}")
    if label is not None and "=" not in label:
        raise ValidationError("label", "must be name=value")
    if not who.admin:
        if owner is not None and owner != who.owner:
            return JobPage(items=[], next_cursor=None)
        owner = who.owner
    filters = {name: value for name, value in
               (("owner", owner), ("state", state), ("job_type", type), ("label", label))
               if value is not None}  # fmt: skip
    page = list_jobs(svc.store, filters, limit=limit, cursor=cursor)
    return JobPage(items=[JobOut(**doc) for doc in page.items], next_cursor=page.next_cursor)


@router.get("/{job_id}", response_model=JobOut, responses=ERRORS)
def get(job_id: str, who: Auth, svc: Svc) -> JobOut:
    """One job; a job this API has just accepted is SUBMITTED, never 404."""
    doc = svc.job(job_id, who)
    raw = stored_params(svc.store, job_id)
    return JobOut(**doc, params=None if raw is None else orjson.loads(raw))


@router.get("/{job_id}/executions", response_model=Executions, responses=ERRORS)
def history(job_id: str, who: Auth, svc: Svc) -> Executions:
    """Every execution of the job: attempt, worker, start, end, error, result."""
    svc.job(job_id, who)
    return Executions.model_validate({"job_id": job_id,
                                      "executions": executions(svc.store, job_id)})


async def _command(svc: Services, who: Principal, job_id: str, name: str,
                   build: Any) -> CommandOut:  # fmt: skip
    doc = svc.job(job_id, who)
    if doc["state"] in TERMINAL_STATES:
        raise ApiError(409, f"job {job_id} has ended ({doc['state']})", "job_id")
    if name in ("pause", "resume") and (doc.get("schedule") or {}).get("cron") is None \
            and doc.get("submitted"):  # fmt: skip
        raise ApiError(409, f"job {job_id} is not recurring: only a schedule pauses", "job_id")
    await _send(svc, [build(job_id, doc.get("workflow_id"))])
    return CommandOut(job_id=job_id, command=name)


@router.post("/{job_id}/cancel", status_code=202, response_model=CommandOut, responses=ERRORS)
async def cancel(job_id: str, who: Auth, svc: Svc, body: CancelIn | None = None) -> CommandOut:
    """Cancel a job (and every later run of a schedule)."""
    reason = body.reason if body else None
    return await _command(svc, who, job_id, "cancel", lambda j, w: commands.cancel_event(
        j, w, reason, now_ms=now_ms()))  # fmt: skip


@router.post("/{job_id}/pause", status_code=202, response_model=CommandOut, responses=ERRORS)
async def pause(job_id: str, who: Auth, svc: Svc) -> CommandOut:
    """Stop a recurring job from firing until resumed."""
    return await _command(svc, who, job_id, "pause",
                          lambda j, w: commands.pause_event(j, w, now_ms=now_ms()))


@router.post("/{job_id}/resume", status_code=202, response_model=CommandOut, responses=ERRORS)
async def resume(job_id: str, who: Auth, svc: Svc) -> CommandOut:
    """Let a paused recurring job fire again."""
    return await _command(svc, who, job_id, "resume",
                          lambda j, w: commands.resume_event(j, w, now_ms=now_ms()))
