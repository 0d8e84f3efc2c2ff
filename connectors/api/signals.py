"""Signals and approvals over HTTP (docs/workflows.md, "Waits and sleeps").

- ``POST /api/v1/workflows/{id}/signals``: a named signal for one of the token's owner's
  workflows (an admin names the owner with ``?owner=``); 202 once it is on jobs.intake.
- ``GET /api/v1/approvals``: the wait steps that ask a person (``approval: true``) and wait
  now, with their prompt and one-time link; ``POST /api/v1/approvals/{job_id}``: approve or
  reject one, recorded as the token's command.
- ``GET`` and ``POST /api/v1/approvals/link``: the same for whoever holds a step's
  one-time link (connectors/api/links.py), with no API token, the link's token in a header
  or the body (never in a path an access log keeps): it reads that step's prompt and
  completes that step, once.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from jobstream._connectors.api import links
from jobstream._connectors.api.commands import requester
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.feed import Doc
from jobstream._connectors.api.models import Problem
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views.query import list_jobs, workflow_jobs
from jobstream._connectors.views.query import params as stored_params
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.held import WAIT_TYPE, signal_event
from jobstream._pipeline.model.lifecycle import JobState

router = APIRouter(tags=["workflows"])

LINK_HEADER = "X-Jobstream-Link"

ERRORS: Responses = {code: {"model": Problem} for code in (401, 404, 409, 422, 503)}
APPROVALS_SHOWN = 500


class SignalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The signal's name, as a wait step names it.")
    payload: Any = Field(None, description="Any JSON value: the result of the step it ends.")
    reject: bool = Field(False, description="Cancel the step it ends instead.")
    step: str | None = Field(None, description="Only this step (by name) may take it.")
    reason: str | None = Field(None, description="Why, kept in the history.")


class SignalOut(BaseModel):
    workflow_id: str
    name: str
    waiting: list[str] = Field(
        description="The steps (job ids) the views show waiting for it when it was sent: "
        "none, and it is kept."
    )


class DecisionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    approve: bool = Field(description="true: the step SUCCEEDS; false: it is CANCELLED.")
    reason: str | None = Field(None, description="Why, kept in the history.")


class ApprovalOut(BaseModel):
    job_id: str
    workflow_id: str
    owner: str
    step: str | None
    signal: str
    prompt: str | None
    waiting_since_ms: int | None = None
    expires_at_ms: int | None = Field(None, description="Its timeout; null: none.")
    link: str = Field(description="The one-time link's path: it completes this step with no "
                                  "API token.")  # fmt: skip


class ApprovalList(BaseModel):
    items: list[ApprovalOut]


def _wait_params(svc: Services, doc: Doc) -> dict[str, Any]:
    """A wait step's params (the views keep them beside its document)."""
    try:
        params = orjson.loads(stored_params(svc.store, doc["job_id"]) or b"{}")
    except orjson.JSONDecodeError:
        return {}
    return params if isinstance(params, dict) else {}


def _approval(svc: Services, doc: Doc) -> ApprovalOut:
    params = _wait_params(svc, doc)
    token = links.link_token(svc.link_secret, doc["owner"], doc["workflow_id"], doc["job_id"])
    return ApprovalOut(job_id=doc["job_id"], workflow_id=doc["workflow_id"], owner=doc["owner"],
                       step=doc.get("step"), signal=str(params.get("signal", "")),
                       prompt=params.get("prompt"), waiting_since_ms=doc.get("updated_at_ms"),
                       expires_at_ms=doc.get("scheduled_at_ms"),
                       link=f"/approve.html#{token}")  # fmt: skip


def _waiting_approval(svc: Services, doc: Doc) -> bool:
    return (doc.get("job_type") == WAIT_TYPE and doc.get("state") == JobState.WAITING
            and doc.get("workflow_id") is not None
            and _wait_params(svc, doc).get("approval") is True)  # fmt: skip


@router.post("/api/v1/workflows/{workflow_id}/signals", status_code=202,
             response_model=SignalOut, responses=ERRORS)  # fmt: skip
async def signal(workflow_id: str, body: SignalIn, who: Auth, svc: Svc,
                 owner: Annotated[str | None, Query(description="An admin token's choice of "
                                                    "owner.")] = None) -> SignalOut:  # fmt: skip
    """Send a signal to a workflow: it ends every step waiting for its name (SUCCEEDED with
    the payload as result, or CANCELLED with ``reject``), or is kept for the first step
    that will. 404 when the views hold no job of the owner's workflow of that id."""
    owner = who.owner_of(owner)
    docs = [doc for doc in workflow_jobs(svc.store, workflow_id) if doc["owner"] == owner]
    if not docs:
        raise ApiError(404, f"workflow {workflow_id} not found", "workflow_id")
    event = signal_event(owner, workflow_id, body.name, body.payload, now_ms=now_ms(),
                         reject=body.reject, step=body.step, reason=body.reason,
                         requested_by=requester(who))  # fmt: skip
    await svc.send([event])
    waiting = [doc["job_id"] for doc in docs if doc.get("state") == JobState.WAITING
               and body.name in (doc.get("waiting_for") or ())]  # fmt: skip
    return SignalOut(workflow_id=workflow_id, name=body.name, waiting=waiting)


@router.get("/api/v1/approvals", response_model=ApprovalList, responses=ERRORS)
def approvals(who: Auth, svc: Svc) -> ApprovalList:
    """The wait steps of the token's owner (every owner's, for an admin) that ask a person
    and wait now, oldest first, with their prompt and one-time link."""
    filters = {"state": JobState.WAITING.value, "job_type": WAIT_TYPE}
    if not who.admin:
        filters["owner"] = who.owner or ""
    page = list_jobs(svc.store, filters, limit=APPROVALS_SHOWN)
    found = [_approval(svc, doc) for doc in page.items if _waiting_approval(svc, doc)]
    return ApprovalList(items=found[::-1])


async def _decide(svc: Services, doc: Doc, body: DecisionIn, by: str) -> ApprovalOut:
    if not _waiting_approval(svc, doc):
        raise ApiError(409, f"step {doc['job_id']} is not waiting for an approval (it ended, "
                            "or asks no person)", "job_id")  # fmt: skip
    shown = _approval(svc, doc)
    event = signal_event(doc["owner"], doc["workflow_id"], shown.signal,
                         {"approved": body.approve, "by": by, "reason": body.reason},
                         now_ms=now_ms(), reject=not body.approve, step=doc["job_id"],
                         reason=body.reason, requested_by=by)  # fmt: skip
    await svc.send([event])
    return shown


def _linked(request: Request, token: str) -> tuple[Services, Doc]:
    svc: Services = request.app.state.services
    job_id = links.job_of(token)
    doc = None if job_id is None else svc.store.doc(job_id)
    if doc is None or doc.get("workflow_id") is None or not links.holds(
            svc.link_secret, token, doc["owner"], doc["workflow_id"]):  # fmt: skip
        raise ApiError(404, "no approval has this link", "token")
    return svc, doc


LinkHeader = Annotated[str, Header(alias=LINK_HEADER, description="The one-time link's token "
                                    "(after the # of its URL).")]  # fmt: skip


class LinkDecisionIn(DecisionIn):
    token: str = Field(description="The one-time link's token (after the # of its URL).")


@router.get("/api/v1/approvals/link", response_model=ApprovalOut, responses=ERRORS)
def linked(token: LinkHeader, request: Request) -> ApprovalOut:
    """The step a one-time link completes, with no API token (the link's token in the
    ``X-Jobstream-Link`` header, never in a URL a log keeps); 409 once it has ended."""
    svc, doc = _linked(request, token)
    if not _waiting_approval(svc, doc):
        raise ApiError(409, f"step {doc['job_id']} is not waiting any more", "token")
    return _approval(svc, doc)


@router.post("/api/v1/approvals/link", status_code=202, response_model=ApprovalOut,
             responses=ERRORS)  # fmt: skip
async def decide_by_link(body: LinkDecisionIn, request: Request) -> ApprovalOut:
    """Approve or reject the step of a one-time link, with no API token (its token in the
    body; recorded as ``link:<job id>``); 409 once it has ended, so a link completes its
    step once."""
    svc, doc = _linked(request, body.token)
    return await _decide(svc, doc, body, f"link:{doc['job_id']}")


# After the link's routes: "link" is no job id.
@router.post("/api/v1/approvals/{job_id}", status_code=202, response_model=ApprovalOut,
             responses=ERRORS)  # fmt: skip
async def decide(job_id: str, body: DecisionIn, who: Auth, svc: Svc) -> ApprovalOut:
    """Approve (the step SUCCEEDS, its result ``{"approved": true, "by", "reason"}``) or
    reject (it is CANCELLED with the reason) a waiting approval; 409 once it has ended."""
    return await _decide(svc, svc.job(job_id, who), body, requester(who))
