"""The web dashboard: one page and its static assets, served by the API process.

Plain HTML, CSS and JavaScript modules written for jobstream, with no third-party asset
and no build step: nothing to vendor, pin or fetch at run time. The page holds no data of
its own; it calls ``/api/v1`` with the token the user logs in with (kept in the tab's
``sessionStorage``) and follows ``/api/v1/stream`` for live updates (docs/dashboard.md).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from jobstream._pipeline.package_data import package_path

STATIC = package_path(__name__, "static")


def mount(app: FastAPI) -> None:
    """Serve the page at ``/``, a one-time approval link's at ``/approve.html``, and their
    assets under ``/static``."""

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/approve.html", include_in_schema=False)
    def approve() -> FileResponse:
        """A one-time approval link's page: its token is the fragment (connectors/api/links.py)."""
        return FileResponse(STATIC / "approve.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
