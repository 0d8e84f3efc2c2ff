"""A worker app for the spawn tests, loaded by module path (process isolation too)."""

from __future__ import annotations

import os
import threading
from typing import Any

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()
RELEASE = threading.Event()
"""Lets spawn.wait (in this process) end."""


@app.handler("spawn.many")
def many(ctx: JobContext) -> list[str]:
    """Spawns ``count`` children of type data.process, keyed by ``keys`` when given (else
    by their ordinals); answers their ids."""
    keys = ctx.params.get("keys") or [None] * int(ctx.params["count"])
    return [ctx.spawn("data.process", {"item": i}, key=key) for i, key in enumerate(keys)]


@app.handler("spawn.async")
async def many_async(ctx: JobContext) -> list[str]:
    """spawn.many from an ``async def``, through ``aspawn``."""
    return [await ctx.aspawn("data.process", {"item": i}) for i in range(int(ctx.params["count"]))]


@app.handler("spawn.bad")
def bad(ctx: JobContext) -> str:
    """Spawns a child with the fields its params give, and says how that went."""
    fields: dict[str, Any] = dict(ctx.params)
    job_type = fields.pop("job_type", "data.process")
    try:
        ctx.spawn(job_type, **fields)
    except ValidationError as exc:
        return f"refused: {exc.field}: {exc.message}"
    return "accepted"


@app.handler("spawn.wait")
def spawn_then_wait(ctx: JobContext) -> str:
    """Spawns two children, then waits for :data:`RELEASE` (or its cancel)."""
    ctx.spawn("data.process", key="first")
    ctx.spawn("data.process", key="second")
    while not RELEASE.is_set() and not ctx.wait_cancelled(0.01):
        pass
    return "released"


@app.handler("spawn.fail")
def spawn_then_fail(ctx: JobContext) -> None:
    """Spawns two children, then fails (retryable)."""
    ctx.spawn("data.process")
    ctx.spawn("data.process")
    raise RuntimeError("failed after spawning")


@app.handler("spawn.crash")
def spawn_then_crash(ctx: JobContext) -> list[str]:
    """Spawns three children; its first attempt then dies without a word (``os._exit``, in
    a child process), a later one returns their ids."""
    ids = [ctx.spawn("data.process", {"item": i}) for i in range(3)]
    if ctx.attempt == 1:
        os._exit(17)
    return ids
