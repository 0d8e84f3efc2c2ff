"""/api/v1/stream, /api/v1/overview and /api/v1/me: what the dashboard watches.

The stream is server-sent events: ``ready`` once subscribed, then one ``status`` event per
changed job document (the body of ``GET /api/v1/jobs/{id}``, its parameters and commands
aside; a command a person gave the job sends it too), with a comment line every
``KEEPALIVE_S`` so proxies keep the connection open. An owner token hears of its own jobs
only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import Responses
from jobstream._connectors.api.feed import CLOSED, Feed
from jobstream._connectors.api.models import ActivityOut, JobOut, Me, Overview, Problem
from jobstream._connectors.api.quotas import quotas_out
from jobstream._connectors.api.services import Auth, Svc
from jobstream._connectors.views import counts, workers
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.lifecycle import JobState

router = APIRouter(prefix="/api/v1", tags=["live"])

ERRORS: Responses = {401: {"model": Problem}}
KEEPALIVE_S = 15.0
PROMISE_MS = 2000
"""The design's promise: a job fires within 2 s of its time."""


def sse(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


async def _events(feed: Feed, who: Principal, request: Request,
                  free: Callable[[], None]) -> AsyncIterator[bytes]:  # fmt: skip
    subscription = feed.subscribe(who.sees)
    try:
        yield sse("ready", "{}")
        while True:
            doc = await subscription.next(KEEPALIVE_S)
            if doc is CLOSED:
                return
            if doc is None:
                if await request.is_disconnected():
                    return
                yield b": keepalive\n\n"
                continue
            yield sse("status", JobOut(**doc).model_dump_json())
    finally:
        feed.unsubscribe(subscription)
        free()


@router.get("/stream", responses={200: {"content": {"text/event-stream": {}}}, **ERRORS,
                                  429: {"model": Problem}})  # fmt: skip
async def stream(request: Request, who: Auth, svc: Svc) -> StreamingResponse:
    """Server-sent events of status changes (``event: status``, data: the job as JSON).
    429 when the token holds as many streams open as its quota allows."""
    free = svc.quotas.open_stream(who)
    # A stream that ends before its first event never runs the generator's ``finally``:
    # the background task frees its slot then (freeing twice is a no-op).
    return StreamingResponse(_events(svc.feed, who, request, free),
                             media_type="text/event-stream", background=BackgroundTask(free),
                             headers={"Cache-Control": "no-cache",
                                      "X-Accel-Buffering": "no"})  # fmt: skip


@router.get("/overview", response_model=Overview, responses=ERRORS)
def overview(who: Auth, svc: Svc) -> Overview:
    """Counts by state and type, recent throughput and lateness, dead letters, workers."""
    owner = None if who.admin else who.owner
    found = counts(svc.store, owner)
    live = [w for w in workers(svc.store, stale_after_ms=svc.api.worker_stale_after)
            if not w["stale"]]  # fmt: skip
    activity = [] if svc.updater is None else svc.updater.activity.series(owner, now_ms())
    return Overview(
        total=found.total, by_state=found.by_state, by_type=found.by_type,
        dead_letters=found.by_state.get(JobState.DEAD_LETTERED, 0), workers=len(live),
        activity=[ActivityOut(**row) for row in activity], promise_ms=PROMISE_MS,
    )  # fmt: skip


@router.get("/me", response_model=Me, responses=ERRORS)
def me(who: Auth, svc: Svc) -> Me:
    """Who the token acts for: an owner, or every owner (an admin); an owner's quotas and
    what it uses of each (docs/api.md, "Tenants and quotas")."""
    quotas = None if who.owner is None else quotas_out(svc, who.owner, who.token)
    return Me(owner=who.owner, admin=who.admin, quotas=quotas)
