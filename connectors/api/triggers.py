"""/api/v1/triggers: a token's owner defines, reads and removes its event triggers.

A trigger is written to jobs.triggers (pipeline/triggers/topic.py), which every trigger
processor follows: it applies within a second, with no restart. An owner token sees and
changes its own triggers only (another owner's answers 404, as if it were not there); an
admin token names the owner (``owner`` in the body, ``?owner=`` otherwise). A definition
that breaks a rule answers 422 naming the field (``filter``, ``job.params.order``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from confluent_kafka import KafkaException
from fastapi import APIRouter, Body, Query, Response

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import ApiError, Responses
from jobstream._connectors.api.models import Problem
from jobstream._connectors.api.services import Auth, Svc
from jobstream._pipeline.errors import JobstreamError, ValidationError
from jobstream._pipeline.triggers.model import Trigger
from jobstream._pipeline.triggers.topic import define_trigger, read_triggers, remove_trigger

router = APIRouter(prefix="/api/v1/triggers", tags=["triggers"])

ERRORS: Responses = {code: {"model": Problem} for code in (401, 404, 422, 503)}
OwnerQuery = Annotated[str | None, Query(description="The owner (admin tokens only).")]
T = TypeVar("T")


def _owner(who: Principal, given: str | None) -> str | None:
    """Whose triggers: the owner token's own; an admin's named one, or everyone's (None)."""
    if who.admin:
        return given
    if given is not None and given != who.owner:
        raise ApiError(404, f"no triggers of owner {given} for this token", "owner")
    return who.owner


@router.get("", responses=ERRORS)
async def list_triggers(who: Auth, svc: Svc, owner: OwnerQuery = None) -> list[dict[str, Any]]:
    """The token's owner's triggers (an admin's: every owner's, or ``?owner=``'s)."""
    whose = _owner(who, owner)
    found = await _kafka("read", lambda: read_triggers(svc.settings, whose))
    return [trigger.to_json() for trigger in found]


@router.post("", status_code=201, responses=ERRORS)
async def define(who: Auth, svc: Svc, body: Annotated[Any, Body()]) -> dict[str, Any]:
    """Define (or replace) a trigger; 422 naming the field at fault."""
    if not isinstance(body, dict):
        raise ValidationError("body", "must be a JSON object")
    owner = who.owner_of(body.get("owner"))
    trigger = Trigger.from_json(body, owner=owner)
    await _kafka("written", lambda: define_trigger(svc.settings, trigger))
    return trigger.to_json()


@router.get("/{name}", responses=ERRORS)
async def show(name: str, who: Auth, svc: Svc, owner: OwnerQuery = None) -> dict[str, Any]:
    return (await _find(name, who, svc, owner)).to_json()


@router.delete("/{name}", status_code=204, responses=ERRORS)
async def remove(name: str, who: Auth, svc: Svc, owner: OwnerQuery = None) -> Response:
    """Remove a trigger: its source's records start no more jobs."""
    trigger = await _find(name, who, svc, owner)
    await _kafka("written", lambda: remove_trigger(svc.settings, trigger.owner, trigger.name))
    return Response(status_code=204)


async def _find(name: str, who: Principal, svc: Svc, owner: str | None) -> Trigger:
    whose = _owner(who, owner)
    if whose is None:
        raise ValidationError("owner", "is required with an admin token")
    found = await _kafka("read", lambda: read_triggers(svc.settings, whose))
    trigger = next((t for t in found if t.name == name), None)
    if trigger is None:
        raise ApiError(404, f"no trigger {name} of owner {whose}", "name")
    return trigger


async def _kafka(what: str, call: Callable[[], T]) -> T:
    try:
        return await asyncio.to_thread(call)
    except ValidationError:
        raise
    except (JobstreamError, KafkaException, BufferError) as exc:
        raise ApiError(503, f"jobs.triggers not {what}: {exc}") from exc
