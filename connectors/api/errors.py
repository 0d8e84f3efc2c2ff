"""Every error the API answers, as one body shape: ``{"detail": ..., "field": ...}``
(and ``"quota"`` when a quota refused it: a 429).

A refused input is a 4xx naming its field: pydantic's location (``body.jobs.3.params``)
becomes the record path the engine uses (``jobs[3].spec.params``). Bodies over the size
limit are refused with 413 before they are parsed (:class:`BodyLimit`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest

log = logging.getLogger(__name__)

Responses = dict[int | str, dict[str, Any]]
"""A route's other responses as FastAPI's ``responses`` takes them (OpenAPI objects)."""

_SPEC_PATHS: Mapping[str, str] = JobRequest._paths


class ApiError(Exception):
    """An answer other than 2xx, with the field at fault when there is one."""

    def __init__(self, status: int, detail: str, field: str | None = None,
                 headers: Mapping[str, str] | None = None, *,
                 quota: str | None = None) -> None:  # fmt: skip
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field
        self.headers = dict(headers or {})
        self.quota = quota
        """The quota that refused the request (a 429), as docs/api.md names it."""


def problem(status: int, detail: str, field: str | None = None,
            headers: Mapping[str, str] | None = None, *,
            quota: str | None = None) -> JSONResponse:  # fmt: skip
    body = {"detail": detail, "field": field}
    if quota is not None:
        body["quota"] = quota
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


JOB_BODIES = frozenset({"/api/v1/jobs", "/api/v1/jobs/batch"})
"""The paths whose bodies are jobs: their fields are named by the record path."""


def field_path(loc: Sequence[str | int], *, job_body: bool = True) -> str:
    """``("body", "jobs", 3, "params")`` -> ``jobs[3].spec.params``; query names stay, and
    so do the fields of a body that is not a job (``job_body`` false)."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    out = ""
    index = 0
    while index < len(parts):
        part = parts[index]
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            previous = parts[index - 1] if index else None
            in_job = job_body and (index == 0 or isinstance(previous, int))
            name = _SPEC_PATHS.get(part, part) if in_job else part
            out += ("." if out else "") + name
        index += 1
    return out or "body"


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return problem(exc.status, exc.detail, exc.field, exc.headers, quota=exc.quota)

    @app.exception_handler(ValidationError)
    async def _invalid(_: Request, exc: ValidationError) -> JSONResponse:
        return problem(422, str(exc), exc.field)

    @app.exception_handler(RequestValidationError)
    async def _unparsed(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        if first.get("type") == "json_invalid":  # its location is a character offset
            where = first.get("loc", ())[-1]
            reason = (first.get("ctx") or {}).get("error", "malformed")
            return problem(422, f"body: not valid JSON ({reason} at character {where})", "body")
        field = field_path(first.get("loc", ()), job_body=request.url.path in JOB_BODIES)
        return problem(422, f"{field}: {first.get('msg', 'invalid')}", field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's "error parsing the body": not JSON at all
            return problem(422, "body: not a JSON document", "body")
        return problem(exc.status_code, str(exc.detail), None, exc.headers)


class BodyLimit:
    """413 for a body over its limit, read no further than the limit.

    ``limits`` maps a path to its limit; other paths get ``default``.
    """

    def __init__(self, app: ASGIApp, *, default: int, limits: Mapping[str, int]) -> None:
        self.app = app
        self.default = default
        self.limits = dict(limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(scope["path"], self.default)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = problem(413, f"the body is over the limit of {limit} bytes", "body")
        await response(scope, receive, send)
