"""POST /api/v1/workflows: submit a workflow (docs/workflows.md) as one record;
GET /api/v1/workflows/{id}: its steps, their states and parents (the job page's graph), a
map's items and spawned children counted by state at the step that started them;
POST /api/v1/workflows/{id}/cancel: cancel every job of it not ended, running ones too.

The body is the Python client's ``submit_workflow`` as JSON; the checks are the engine's
(:func:`jobstream._pipeline.workflows.commands.workflow_event`), whose errors name
``steps.<i>.<field>``
(``steps`` for a cycle), so nothing of a workflow with one bad step is sent.

A workflow id names a workflow within its owner's: an owner token reads and cancels its
own owner's, an admin token names the owner (``?owner=``) when two owners use the id.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from jobstream._connectors.api.auth import Principal, same_key
from jobstream._connectors.api.commands import requester
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.feed import Doc
from jobstream._connectors.api.models import (
    CommandIn,
    HeldOut,
    MembersOut,
    Problem,
    StepOut,
    WorkflowAccepted,
    WorkflowCancelOut,
    WorkflowIn,
    WorkflowOut,
)
from jobstream._connectors.api.services import Auth, Services, Svc
from jobstream._connectors.views.query import params as stored_params
from jobstream._connectors.views.query import workflow_jobs
from jobstream._connectors.views.schedules import workflow_schedules
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import commands
from jobstream._pipeline.model.held import (
    HELD_TYPES,
    MAP_TYPE,
    SLEEP_TYPE,
    WAIT_TYPE,
    Map,
    Sleep,
    Wait,
    held_step,
)
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES
from jobstream._pipeline.model.records import JobSpec
from jobstream._pipeline.workflows import topological_order
from jobstream._pipeline.workflows.commands import expand_workflow, step_ids, workflow_event
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL

router = APIRouter(prefix="/api/v1/workflows", tags=["workflows"])

ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 413, 422, 503)
}
READ_ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 404, 422)
}
OwnerQuery = Annotated[str | None, Query(description="The workflow's owner; an admin token's "
                                         "choice when two owners use the id.")]  # fmt: skip
CANCEL_ERRORS: Responses = {
    code: {"model": Problem} for code in (401, 404, 409, 422, 503)
}


@router.post("", status_code=201, response_model=WorkflowAccepted,
             responses={**ERRORS, 200: {"model": WorkflowAccepted,
                                        "description": "The idempotency key's workflow exists."}})
async def submit_workflow(body: WorkflowIn, response: Response, who: Auth, svc: Svc,
                          idempotency_key: Annotated[str | None, Header()] = None,
                          ) -> WorkflowAccepted:  # fmt: skip
    """Submit a workflow: 201 with its id and its steps' job ids. When the owner's workflow
    of that id (or idempotency key) exists, 200 with the same ids (nothing is sent again);
    another owner's workflow of the same id is another workflow."""
    owner = who.owner_of(body.owner)
    key = same_key(body.idempotency_key, idempotency_key)
    now = now_ms()
    event = workflow_event(owner, body.steps, now_ms=now,
                           workflow_id=body.workflow_id, idempotency_key=key)  # fmt: skip
    ids = step_ids(event)
    workflow_id = event.data.workflow_id
    if any(svc.store.doc(job_id) or svc.pending.get(job_id) for job_id in ids.values()):
        response.status_code = 200
        return WorkflowAccepted(workflow_id=workflow_id, job_ids=ids, created=False)
    await svc.send([event], who)
    for _, job in expand_workflow(event.data, now_ms=now):
        svc.accept(job)
    return WorkflowAccepted(workflow_id=workflow_id, job_ids=ids, created=True)


def _visible_jobs(svc: Services, who: Principal, workflow_id: str,
                  owner: str | None) -> list[Doc]:  # fmt: skip
    """The jobs of one owner's workflow the views hold: the token's owner's, or for an
    admin the one ``owner`` names (needed only when several owners use the id); 404 when
    there are none."""
    if not who.admin:
        owner = who.owner
    docs = [doc for doc in workflow_jobs(svc.store, workflow_id)
            if who.sees(doc["owner"]) and owner in (None, doc["owner"])]  # fmt: skip
    if not docs:
        raise ApiError(404, f"workflow {workflow_id} not found", "workflow_id")
    owners = sorted({doc["owner"] for doc in docs})
    if len(owners) > 1:
        raise ValidationError("owner", f"workflow {workflow_id} exists for {len(owners)} "
                                       "owners: name one with ?owner=")  # fmt: skip
    return docs


def recurring_owner(svc: Services, who: Principal, workflow_id: str,
               owner: str | None) -> str | None:  # fmt: skip
    """The owner of the recurring workflow ``workflow_id`` the token may command (the views
    keep its schedule, connectors/views/schedules.py), or None when there is none."""
    found = workflow_schedules(svc.store, workflow_id, owner if who.admin else who.owner)
    owners = sorted({held["owner"] for held in found})
    if len(owners) > 1:
        raise ValidationError("owner", f"workflow {workflow_id} exists for {len(owners)} "
                                       "owners: name one with ?owner=")  # fmt: skip
    return owners[0] if owners else None


@router.get("/{workflow_id}", response_model=WorkflowOut, responses=READ_ERRORS)
def get_workflow(workflow_id: str, who: Auth, svc: Svc,
                 owner: OwnerQuery = None) -> WorkflowOut:  # fmt: skip
    """A workflow's steps as the views hold them, parents first: step name, type, kind,
    state, parents (job ids), what a wait, sleep or map asks for, and the members a step
    started (a map's items, spawned children) counted by state. 404 when the views hold
    none of the token's owner's workflow of that id."""
    docs = _visible_jobs(svc, who, workflow_id, owner)
    return WorkflowOut(workflow_id=workflow_id, owner=docs[0]["owner"],
                       steps=graph_steps(docs, lambda job_id: stored_params(svc.store, job_id)))


ITEM_STEP = re.compile(r"(?P<map>.+)\[(?P<index>\d+)\]")
"""A map item's step name (pipeline/workflows/members.py, ``item_step``)."""
KINDS = {WAIT_TYPE: "wait", SLEEP_TYPE: "sleep", MAP_TYPE: "map"}


def member_holders(docs: Sequence[Doc]) -> dict[str, tuple[str, str]]:
    """Member job id -> (the step it is counted at, ``items`` or ``children``).

    An item is a job whose step name is ``<map step>[<index>]`` for a map step of the
    workflow; a child one whose ``jobstream.spawned_by`` label names a job of it. A member
    of a member (a child an item spawned) counts at the outermost holder, as a child: the
    graph draws steps, and a member is never one. Pure."""
    maps = {doc["step"]: doc["job_id"] for doc in docs
            if doc["job_type"] == MAP_TYPE and doc.get("step")}  # fmt: skip
    ids = {doc["job_id"] for doc in docs}
    direct: dict[str, tuple[str, str]] = {}
    for doc in docs:
        job_id = doc["job_id"]
        # An item before a child: items carry their map's labels, a spawned_by among them.
        item = ITEM_STEP.fullmatch(doc.get("step") or "")
        spawner = (doc.get("labels") or {}).get(SPAWNED_BY_LABEL)
        if item is not None and maps.get(item["map"], job_id) != job_id:
            direct[job_id] = (maps[item["map"]], "items")
        elif spawner is not None and spawner in ids and spawner != job_id:
            direct[job_id] = (spawner, "children")
    holders = {}
    for job_id, (holder, kind) in direct.items():
        seen = {job_id}
        while holder in direct and holder not in seen:
            seen.add(holder)
            holder, kind = direct[holder][0], "children"
        if holder not in direct:  # labels in a cycle (no job writes them so): drawn as steps
            holders[job_id] = (holder, kind)
    return holders


def held_params(job_type: str, params: bytes | None) -> HeldOut | None:
    """What a wait, sleep or map step's parameters ask for; None for another job, or for
    parameters the views do not keep (over 64 KB) or cannot read. Pure."""
    if job_type not in HELD_TYPES or params is None:
        return None
    try:
        held = held_step(JobSpec(job_type=job_type, owner="-", params=params.decode()))
    except (ValidationError, ValueError):  # orjson's and decode()'s errors are ValueErrors
        return None
    if isinstance(held, Wait):
        return HeldOut(signal=held.signal, prompt=held.prompt, approval=held.approval,
                       timeout_ms=held.timeout_ms)  # fmt: skip
    if isinstance(held, Sleep):
        return HeldOut(for_ms=held.for_ms, until_ms=held.until_ms)
    assert isinstance(held, Map)
    return HeldOut(over=held.over, item_type=held.job_type, max_concurrency=held.max_concurrency)


def graph_steps(docs: Sequence[Doc],
                params_of: Callable[[str], bytes | None]) -> list[StepOut]:  # fmt: skip
    """The steps of a workflow's documents, parents first (by submission among equals),
    members counted at their holders: bounded by the steps submitted, whatever a map's
    size. ``params_of`` reads a job's stored parameters, asked for held steps only."""
    holders = member_holders(docs)
    counts: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    steps = []
    for doc in docs:
        if doc["job_id"] in holders:
            counts[holders[doc["job_id"]]][doc["state"]] += 1
        else:
            steps.append(doc)
    steps.sort(key=lambda doc: (doc["created_at_ms"], doc["job_id"]))
    held = {doc["job_id"]: doc for doc in steps}
    order = topological_order([(job_id, [p for p in doc.get("depends_on") or [] if p in held])
                               for job_id, doc in held.items()])  # fmt: skip

    def members(job_id: str, kind: str) -> MembersOut | None:
        found = counts.get((job_id, kind))
        return None if not found else MembersOut(total=sum(found.values()),
                                                 by_state=dict(sorted(found.items())))

    def step(doc: Doc) -> StepOut:
        job_id, job_type = doc["job_id"], doc["job_type"]
        plain = {name: value for name, value in doc.items() if name in StepOut.model_fields}
        raw = params_of(job_id) if job_type in HELD_TYPES else None
        return StepOut(**{**plain, "kind": KINDS.get(job_type, "job"),
                          "waiting_for": doc.get("waiting_for") or [],
                          "held": held_params(job_type, raw),
                          "items": members(job_id, "items"),
                          "children": members(job_id, "children")})

    return [step(held[job_id]) for job_id in order]


@router.post("/{workflow_id}/cancel", status_code=202, response_model=WorkflowCancelOut,
             responses=CANCEL_ERRORS)  # fmt: skip
async def cancel_workflow(workflow_id: str, who: Auth, svc: Svc, body: CommandIn | None = None,
                          owner: OwnerQuery = None) -> WorkflowCancelOut:  # fmt: skip
    """Cancel every job of the workflow that has not ended: pending ones are dropped, queued
    and running ones stopped where a worker holds them; later submissions to it are
    refused. A recurring workflow's cancel ends its schedule (no run starts after it; the
    runs started go on, each cancelled by its own id). 202 once the command is on
    jobs.intake; 404 as for GET; 409 when every job of it has ended."""
    scheduled = recurring_owner(svc, who, workflow_id, owner)
    if scheduled is not None:  # a recurring workflow: its schedule ends, its runs go on
        await svc.send([commands.cancel_workflow_event(
            scheduled, workflow_id, body.reason if body else None, now_ms=now_ms(),
            requested_by=requester(who))])  # fmt: skip
        return WorkflowCancelOut(workflow_id=workflow_id, jobs=[])
    docs = _visible_jobs(svc, who, workflow_id, owner)
    open_jobs = sorted(doc["job_id"] for doc in docs if doc["state"] not in TERMINAL_STATES)
    if not open_jobs:
        raise ApiError(409, f"workflow {workflow_id} has ended: every job of it has",
                       "workflow_id")  # fmt: skip
    reason = body.reason if body else None
    await svc.send([commands.cancel_workflow_event(docs[0]["owner"], workflow_id, reason,
                                                   now_ms=now_ms(),
                                                   requested_by=requester(who))])  # fmt: skip
    return WorkflowCancelOut(workflow_id=workflow_id, jobs=open_jobs)
