"""A worker app for the progress tests that load it by module path (process isolation)."""

from __future__ import annotations

import asyncio
import time

from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()
flood = WorkerApp()
"""Serves data.process (a type whose topics every test's ``topics`` fixture creates)."""


@app.handler("progress.steps")
def steps(ctx: JobContext) -> int:
    """Reports ``steps`` steps, then answers how many it reported."""
    count = int(ctx.params["steps"])
    for step in range(1, count + 1):
        ctx.progress(step / count, f"step {step} of {count}")
    return count


@app.handler("progress.async")
async def steps_async(ctx: JobContext) -> int:
    """The same from an ``async def``, through ``aprogress``."""
    count = int(ctx.params["steps"])
    for step in range(1, count + 1):
        await ctx.aprogress(step / count, f"step {step} of {count}")
    await asyncio.sleep(0)
    return count


@app.handler("progress.bad")
def bad(ctx: JobContext) -> str:
    """Reports the fraction its params give, and says how that went."""
    try:
        ctx.progress(ctx.params["fraction"], ctx.params.get("message"))
    except ValueError as exc:
        return f"refused: {exc}"
    return "accepted"


@flood.handler("data.process")
def flood_reports(ctx: JobContext) -> int:
    """Reports every millisecond or so for ``seconds``, then ``1.0 done``; answers how many
    reports it made."""
    seconds = float(ctx.params["seconds"])
    began = time.monotonic()
    count = 0
    while (spent := time.monotonic() - began) < seconds:
        count += 1
        ctx.progress(0.99 * spent / seconds, f"item {count}")
        time.sleep(0.001)
    ctx.progress(1.0, "done")
    return count + 1
