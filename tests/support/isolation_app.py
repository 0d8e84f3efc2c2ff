"""Handlers for process isolation (``--isolation process``): ones that crash their process.

``iso.work`` does what its params say, so that crashing and ordinary jobs of one type run
side by side: ``mark`` a file it creates as it begins, ``signal`` (a signal name) the
process sends itself, ``exit_code`` it ``os._exit``s with, ``sleep_s`` it sleeps
(``stubborn``: through any SIGTERM), ``raise`` a message it raises, ``bytes`` a result of
that many bytes it returns; otherwise it answers with its process id and its ``n``.
``iso.async`` is the same answer from an ``async def``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()


@app.handler("iso.work")
def work(ctx: JobContext) -> Any:
    params = ctx.params
    if "mark" in params:
        Path(params["mark"]).touch()
    if "signal" in params:
        os.kill(os.getpid(), signal.Signals[params["signal"]])
    if "exit_code" in params:
        os._exit(int(params["exit_code"]))
    until = time.monotonic() + float(params.get("sleep_s", 0))
    while (left := until - time.monotonic()) > 0:
        try:
            time.sleep(left)
        except BaseException:  # what a handler must not do: only SIGKILL stops it
            if not params.get("stubborn"):
                raise
    if "raise" in params:
        raise ValueError(params["raise"])
    if "bytes" in params:
        return b"\x01" * int(params["bytes"])
    return {"pid": os.getpid(), "n": params.get("n")}


@app.handler("iso.async")
async def work_async(ctx: JobContext) -> dict[str, Any]:
    await asyncio.sleep(float(ctx.params.get("sleep_s", 0)))
    return {"pid": os.getpid(), "n": ctx.params.get("n")}
