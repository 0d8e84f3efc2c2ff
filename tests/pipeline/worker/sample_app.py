"""A worker app for the tests that load it by module path (``--app``)."""

from __future__ import annotations

import time

from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()
other = WorkerApp()
not_an_app = "just a string"


@app.handler("data.process")
def process(ctx: JobContext) -> dict:
    """Works for ``params["seconds"]``, then answers; stands for a real job's duration."""
    time.sleep(float(ctx.params.get("seconds", 0)))
    return {"job": ctx.job_id, "echo": ctx.params.get("echo")}


@app.handler("image.render", timeout_s=30)
async def render(ctx: JobContext) -> str:
    return "rendered"


@other.handler("report.generate")
def refuse(ctx: JobContext) -> None:
    raise NonRetryableError("reports are not generated here")
