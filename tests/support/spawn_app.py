"""Handlers that spawn children (``ctx.spawn``), for the end-to-end test of process isolation.

``spawn.parent`` spawns ``count`` children of type ``spawn.child`` (keyed by their
ordinals), then, on its first attempt, dies without a word (``os._exit``: its process, a
child of the worker, is gone); a later attempt spawns them again and answers their ids.
``spawn.child`` sleeps ``sleep_s`` (the parent's ``child_sleep_s``), then answers its item
and process id.
"""

from __future__ import annotations

import os
import time
from typing import Any

from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()


@app.handler("spawn.parent")
def parent(ctx: JobContext) -> list[str]:
    pause = ctx.params.get("child_sleep_s", 0)
    ids = [ctx.spawn("spawn.child", {"item": i, "sleep_s": pause})
           for i in range(int(ctx.params["count"]))]  # fmt: skip
    if ctx.attempt == 1:
        os._exit(17)
    return ids


@app.handler("spawn.child")
def child(ctx: JobContext) -> dict[str, Any]:
    time.sleep(ctx.params.get("sleep_s", 0))
    return {"item": ctx.params["item"], "pid": os.getpid()}
