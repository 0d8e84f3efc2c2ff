"""/api/v1/jobs: submit (one or a batch), list, read, history and results (commands:
commands.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Response

from jobstream._connectors.api.auth import Principal, same_key
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.feed import Doc
from jobstream._connectors.api.models import (
    Accepted,
    BatchAccepted,
    BatchIn,
    Executions,
    JobCommandOut,
    JobIn,
    JobOut,
    JobPage,
    Problem,
)
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views import SUBMITTED, commands, executions, list_jobs
from jobstream._connectors.views.large_params import read_large_params
from jobstream._connectors.views.query import params as stored_params
from jobstream._connectors.views.results import read_result
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.model.params import PARAMS_URI
from jobstream._pipeline.scheduling.backfill import parse_instant_ms
from jobstream._pipeline.worker.results import JSON

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 404, 409, 413, 422, 429, 503)
}
STATES = {state.value for state in JobState} | {SUBMITTED}
JOB_FIELDS = frozenset(JobIn.model_fields)
_SPEC_PATHS = JobRequest._paths


def _request(fields: dict[str, Any], who: Principal, header_key: str | None,
             path: str = "") -> JobRequest:  # fmt: skip
    """The JobRequest of a body's fields (those of JobIn), owned as the token allows;
    ValidationError naming the field otherwise."""
    unknown = next((name for name in fields if name not in JOB_FIELDS), None)
    if unknown is not None:
        raise ValidationError(path + _SPEC_PATHS.get(unknown, unknown), "is not a known field")
    owner = who.owner_of(fields.pop("owner", None), f"{path}spec.owner")
    key = same_key(fields.pop("idempotency_key", None), header_key, f"{path}idempotency_key")
    try:
        return JobRequest(owner=owner, idempotency_key=key, **fields)
    except ValidationError as exc:
        raise ValidationError(path + exc.field, exc.message) from None


def _check_parents(svc: Services, request: JobRequest, path: str = "",
                   batch: Mapping[str, Doc] | None = None) -> None:  # fmt: skip
    """A job depends only on jobs of its own owner's workflow: each parent must be one the
    views, the jobs this process just accepted or the same batch hold as such. (A raw
    record is held to it by the timers, which refuse it to jobs.intake.dlq.) The refusal
    reads the same whether the parent is unknown or another owner's."""
    for i, parent in enumerate(request.depends_on):
        doc = (batch or {}).get(parent) or svc.store.doc(parent) or svc.pending.get(parent)
        if (doc is None or doc.get("owner") != request.owner
                or doc.get("workflow_id") != request.workflow_id):  # fmt: skip
            raise ValidationError(f"{path}{_SPEC_PATHS.get('depends_on', 'depends_on')}.{i}",
                                  f"{parent} is not a job of {request.owner}'s workflow "
                                  f"{request.workflow_id}")  # fmt: skip


@router.post("", status_code=201, response_model=Accepted,
             responses={**ERRORS, 200: {"model": Accepted,
                                        "description": "The idempotency key's job exists."}})
async def submit(job: JobIn, response: Response, who: Auth, svc: Svc,
                 idempotency_key: Annotated[str | None, Header()] = None) -> Accepted:  # fmt: skip
    """Submit one job: 201 with its id and Location. With an idempotency key naming a job
    that exists, 200 with that job (nothing is sent again)."""
    request = _request(job.model_dump(exclude_unset=True), who, idempotency_key)
    _check_parents(svc, request)
    event = request.to_event(now_ms(), submitted_by=who.actor)
    job_id = event.data.job_id
    response.headers["Location"] = f"/api/v1/jobs/{job_id}"
    if request.idempotency_key is not None:
        known = svc.store.doc(job_id) or svc.pending.get(job_id)
        if known is not None:
            response.status_code = 200
            return Accepted(job_id=job_id, state=known["state"], created=False)
    await svc.send([event], who)
    svc.accept(event.data)
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
    earlier: dict[str, Doc] = {}  # the batch's jobs: what a child of one checks
    for i, job in enumerate(batch.jobs):
        request = _request(dict(job), who, None, f"jobs[{i}].")
        _check_parents(svc, request, f"jobs[{i}].", earlier)
        try:
            events.append(request.to_event(now, submitted_by=who.actor))
        except ValidationError as exc:
            raise ValidationError(f"jobs[{i}].{exc.field}", exc.message) from None
        data = events[-1].data
        earlier[data.job_id] = {"owner": request.owner, "workflow_id": request.workflow_id}
    await svc.send(events, who, batch=True)
    for event in events:
        svc.accept(event.data)
    return BatchAccepted(job_ids=[event.data.job_id for event in events])


_INSTANT = ("Jobs created {} this instant: ISO 8601 with a zone (2026-03-01T09:00:00Z) or "
            "epoch ms.")


def instant_ms(value: str | None, field: str) -> int | None:
    """Epoch ms of a query's instant, given as epoch ms or ISO 8601 with a zone; None for
    None; ValidationError naming ``field`` otherwise."""
    if value is None:
        return None
    if value.strip().isdigit():
        return int(value)
    return parse_instant_ms(value, field)


@router.get("", response_model=JobPage, responses=ERRORS)
def list_(who: Auth, svc: Svc,
          owner: str | None = None,
          state: str | None = None,
          type: str | None = Query(None, description="Job type."),
          label: str | None = Query(None, description="name=value"),
          limit: int = Query(50, ge=1, le=500),
          cursor: str | None = None,
          since: str | None = Query(None, description=_INSTANT.format("at or after")),
          until: str | None = Query(None, description=_INSTANT.format("before"))
          ) -> JobPage:  # fmt: skip
    """Jobs newest first, filtered; an owner token sees its own jobs only."""
    since_ms, until_ms = instant_ms(since, "since"), instant_ms(until, "until")
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        raise ValidationError("until", "must be after since")
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
    page = list_jobs(svc.store, filters, limit=limit, cursor=cursor, since_ms=since_ms,
                     until_ms=until_ms)  # fmt: skip
    return JobPage(items=[JobOut(**doc) for doc in svc.shown(page.items)],
                   next_cursor=page.next_cursor)  # fmt: skip


@router.get("/{job_id}", response_model=JobOut, responses=ERRORS)
def get(job_id: str, who: Auth, svc: Svc) -> JobOut:
    """One job, with the commands people gave it; a job this API has just accepted is
    SUBMITTED, never 404."""
    (doc,) = svc.shown([svc.job(job_id, who)])
    given = [JobCommandOut(**command) for command in commands(svc.store, job_id)]
    raw = stored_params(svc.store, job_id)
    if raw is not None:
        return JobOut(**doc, params=orjson.loads(raw), commands=given)
    return JobOut(**doc, params_uri=PARAMS_URI.format(job_id=job_id), commands=given)


@router.get("/{job_id}/params", responses={
    **ERRORS, 200: {"content": {"application/json": {"schema": {"type": "object"}}},
                    "description": "The parameters, as submitted."}})  # fmt: skip
async def parameters(job_id: str, who: Auth, svc: Svc) -> Response:
    """The job's parameters whole: the ``params_uri`` of a jobs.status record whose
    parameters are too large to be inline. 404 once jobs.intake no longer holds them."""
    doc = svc.job(job_id, who)
    raw = stored_params(svc.store, job_id)
    if raw is None:
        raw = await asyncio.to_thread(read_large_params, svc.settings, svc.store, doc)
    if raw is None:
        raise ApiError(404, f"the parameters of job {job_id} are not held: the views have not "
                            "read its submission yet, or jobs.intake no longer has it", "job_id")
    return Response(raw, media_type="application/json")


@router.get("/{job_id}/executions", response_model=Executions, responses=ERRORS)
def history(job_id: str, who: Auth, svc: Svc) -> Executions:
    """Every execution of the job: attempt, worker, start, end, error, result."""
    svc.job(job_id, who)
    return Executions.model_validate({"job_id": job_id,
                                      "executions": executions(svc.store, job_id)})


_RESULT_RESPONSES: Responses = {
    **ERRORS, 200: {"content": {"application/json": {}, "application/octet-stream": {}},
                    "description": "The result's bytes, with the content type it was "
                    "written with; header X-Jobstream-Execution names the run."}}  # fmt: skip


@router.get("/{job_id}/result", responses=_RESULT_RESPONSES)
async def result(job_id: str, who: Auth, svc: Svc) -> Response:
    """The job's latest result whole, as jobs.results holds it (the ``result_uri`` of a
    result too large to be inline). 404 before any run has returned, or once jobs.results
    no longer holds it (its retention)."""
    svc.job(job_id, who)
    return await _result(svc, job_id, None, f"job {job_id} has no result held")


@router.get("/{job_id}/executions/{attempt}/result", responses=_RESULT_RESPONSES)
async def execution_result(job_id: str, attempt: str, who: Auth, svc: Svc) -> Response:
    """One run's result: ``attempt`` is an attempt number (its latest firing's, for a
    recurring job) or an execution id. 404 when that run returned nothing held: it failed,
    or a later run of the job has replaced it on the compacted topic."""
    svc.job(job_id, who)
    return await _result(svc, job_id, run_of(svc, job_id, attempt, succeeded=True),
                         f"execution {attempt} of job {job_id} has no result held")


def run_of(svc: Services, job_id: str, attempt: str, *, succeeded: bool = False) -> Doc:
    """The execution ``attempt`` names: by id, or the latest firing's of that number (with
    ``succeeded``, the latest that succeeded, if one did)."""
    runs = executions(svc.store, job_id)
    if not attempt.isdigit():
        for run in runs:
            if run["execution_id"] == attempt:
                return run
        raise ApiError(404, f"job {job_id} has no execution {attempt}", "attempt")
    matching = [run for run in runs if run["attempt"] == int(attempt)]
    if not matching:
        raise ApiError(404, f"job {job_id} has no attempt {attempt}", "attempt")
    if succeeded:
        matching = [run for run in matching if run["outcome"] == "SUCCEEDED"] or matching
    return matching[-1]  # runs sort by firing, then attempt


async def _result(svc: Services, job_id: str, run: Doc | None, missing: str) -> Response:
    """``run``'s result; with None, the job's latest."""
    ended = run if run is not None else _latest_succeeded(svc, job_id)
    if ended is not None and ended["outcome"] == "SUCCEEDED" and ended["result"] == "null":
        return _result_response(b"null", JSON, ended["execution_id"])  # no jobs.results record
    execution_id = None if run is None else str(run["execution_id"])
    found = await asyncio.to_thread(read_result, svc.settings, svc.store, job_id, execution_id)
    if found is None:
        raise ApiError(404, f"{missing}: no run has returned yet, it failed, or jobs.results "
                            "no longer holds it", "job_id")  # fmt: skip
    return _result_response(found.body, found.content_type, found.execution_id)


def _latest_succeeded(svc: Services, job_id: str) -> Doc | None:
    ended = [run for run in executions(svc.store, job_id) if run["outcome"] == "SUCCEEDED"]
    return ended[-1] if ended else None  # runs sort by firing, then attempt


def _result_response(body: bytes, content_type: str, execution_id: str | None) -> Response:
    # attachment: a handler's text/html is never rendered as a page of the API's origin
    headers = {"Content-Disposition": "attachment"}
    if execution_id:
        headers["X-Jobstream-Execution"] = execution_id
    return Response(body, media_type=content_type, headers=headers)
