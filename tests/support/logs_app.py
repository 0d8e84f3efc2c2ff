"""Handlers that write log lines, for the tests of each run's logs.

``logs.work`` (sync) and ``logs.async`` (``async def``) log each of ``lines`` at INFO
through the logger :data:`LOGGER`, each as ``<line> (attempt <n>)``; ``logs.work`` also
prints each of ``prints`` to stdout and each of ``errors`` to stderr (what a child of
``--isolation process`` passes on), logs ``bulk`` numbered lines, and then, while the
attempt is below ``fail_until_attempt``, logs the exception it raises with its traceback
and fails; with ``signal`` it kills its own process after writing (a crash), with
``sleep_s`` it sleeps before it ends. Both answer with their attempt.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from typing import Any

from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()
LOGGER = "tests.logs_app"
log = logging.getLogger(LOGGER)


class Flaky(Exception):
    """The failure of an attempt that the next one does not meet."""


def _write(ctx: JobContext) -> None:
    params = ctx.params
    for line in params.get("lines", ()):
        log.info("%s (attempt %d)", line, ctx.attempt)
    for line in params.get("prints", ()):
        print(f"{line} (attempt {ctx.attempt})")
    for line in params.get("errors", ()):
        print(f"{line} (attempt {ctx.attempt})", file=sys.stderr)
    for i in range(int(params.get("bulk", 0))):
        log.info("bulk line %d", i)


@app.handler("logs.work")
@app.handler("logs.child")
def work(ctx: JobContext) -> dict[str, Any]:
    _write(ctx)
    time.sleep(float(ctx.params.get("sleep_s", 0)))
    if "signal" in ctx.params:
        os.kill(os.getpid(), signal.Signals[ctx.params["signal"]])
    if ctx.attempt < int(ctx.params.get("fail_until_attempt", 0)):
        try:
            raise Flaky(f"attempt {ctx.attempt} fails")
        except Flaky:
            log.exception("giving up attempt %d", ctx.attempt)
            raise
    return {"attempt": ctx.attempt}


@app.handler("logs.async")
async def work_async(ctx: JobContext) -> dict[str, Any]:
    for line in ctx.params.get("lines", ()):
        log.info("%s (attempt %d)", line, ctx.attempt)
        await asyncio.sleep(float(ctx.params.get("sleep_s", 0)))
    return {"attempt": ctx.attempt}
