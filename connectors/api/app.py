"""The HTTP API: a FastAPI app over the views and jobs.intake (docs/api.md).

``/healthz``, ``/openapi.json``, ``/docs``, the dashboard's page and assets (``/``,
``/static``) and a one-time approval link (``/api/v1/approvals/link``, whose token is its
own, connectors/api/links.py) need no API token; everything else under ``/api/v1``
needs a bearer token
(connectors/api/auth.py), the dashboard's calls included. Every response carries the
origin's security headers (connectors/api/headers.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from jobstream._connectors.api import (
    backfill,
    commands,
    docs,
    errors,
    jobs,
    live,
    operations,
    quotas,
    runlogs,
    schedules,
    signals,
    timeline,
    triggers,
    workflow_schedules,
    workflows,
)
from jobstream._connectors.api.headers import SecurityHeaders
from jobstream._connectors.api.models import Problem
from jobstream._connectors.api.services import Services
from jobstream._connectors.dashboard import mount as mount_dashboard

log = logging.getLogger(__name__)

Next = Callable[[Request], Awaitable[Response]]


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document the API serves, without starting it (tests fuzz from it)."""
    return create_app(None).openapi()


def create_app(svc: Services | None) -> FastAPI:
    """The API over ``svc``; None builds it for its document only (it serves nothing)."""
    app = FastAPI(
        title="jobstream",
        version="1",
        description="Submit, query and steer jobs of a jobstream scheduler.",
        docs_url=None,  # connectors/api/docs.py serves it from this origin
        redoc_url=None,
    )
    app.state.services = svc
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(runlogs.router)
    app.include_router(commands.router)
    app.include_router(backfill.router, responses={429: {"model": Problem}})
    # A workflow's steps pass their owner's quotas (connectors/api/gate.py).
    app.include_router(workflows.router, responses={429: {"model": Problem}})
    app.include_router(workflow_schedules.router)
    app.include_router(operations.router)
    app.include_router(live.router)
    app.include_router(quotas.router)
    app.include_router(timeline.router)
    app.include_router(schedules.router)
    app.include_router(signals.router)
    app.include_router(triggers.router)
    mount_dashboard(app)
    docs.mount(app)

    @app.get("/healthz", tags=["health"])
    def healthz(request: Request) -> JSONResponse:
        """200 while the view updater turns; 503 naming what is wrong otherwise."""
        updater = request.app.state.services.updater
        problem = updater.health() if updater is not None else None
        body = {
            "status": "ok" if problem is None else "unhealthy",
            "problem": problem,
            "views": None if updater is None else {
                "caught_up": updater.caught_up(), "folded": updater.stats.folded,
                "skipped": updater.stats.skipped, "purged": updater.stats.purged,
            },
        }  # fmt: skip
        return JSONResponse(body, status_code=200 if problem is None else 503)

    if svc is not None:
        _serve(app, svc)
    app.add_middleware(SecurityHeaders)  # added last: outermost, so 413s carry them too
    return app


def _serve(app: FastAPI, svc: Services) -> None:
    """What only a serving app has: body limits and the access log."""
    app.add_middleware(
        errors.BodyLimit,
        default=svc.api.api_max_body_bytes,
        limits={"/api/v1/jobs/batch": svc.api.api_max_batch_bytes},
    )

    @app.middleware("http")
    async def access_log(request: Request, call_next: Next) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        who = getattr(request.state, "principal", None)  # None: no valid token was shown
        log.info("request", extra={
            "method": request.method, "path": request.url.path, "status": response.status_code,
            "ms": round((time.perf_counter() - started) * 1000, 2),
            "principal": who.actor if who is not None else None,
            "token": who.token if who is not None else None,
        })  # fmt: skip
        return response
