"""The handlers the end-to-end tests run through the whole pipeline."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.worker import JobContext, WorkerApp

app = WorkerApp()


class Transient(Exception):
    """A failure another attempt may not see."""


@app.handler("data.process")
def work(ctx: JobContext) -> dict[str, Any] | bytes | None:
    """Sleeps ``sleep_s`` (``first_attempt_sleep_s`` on attempt 1, when given; with
    ``cancellable``, waking when the run is cancelled, and then returning), fails while the
    attempt is below ``fail_until_attempt``, kills its own process with ``kill_process``
    (as a segfault or the OOM killer would), refuses for good with ``non_retryable``;
    otherwise answers with its attempt, and with ``echo_parents`` also its parents'
    outcomes and results (workflow tests); with ``result_bytes``, answers that many bytes
    of :func:`pattern` instead, with ``no_result`` nothing (results tests). First, with
    ``progress_steps``, it waits ``progress_delay_s``, then reports each step's progress
    (``step k of n``) and waits ``progress_pause_s`` after it."""
    params = ctx.params
    steps = int(params.get("progress_steps", 0))
    if steps:
        time.sleep(float(params.get("progress_delay_s", 0)))
    for step in range(1, steps + 1):
        ctx.progress(step / steps, f"step {step} of {steps}")
        time.sleep(float(params.get("progress_pause_s", 0)))
    sleep_s = params.get("sleep_s", 0)
    if ctx.attempt == 1:
        sleep_s = params.get("first_attempt_sleep_s", sleep_s)
    if params.get("cancellable"):
        if ctx.wait_cancelled(float(sleep_s)):
            return {"cancelled": True}
    else:
        time.sleep(float(sleep_s))
    if params.get("kill_process"):
        os.kill(os.getpid(), signal.SIGKILL)
    if params.get("non_retryable"):
        raise NonRetryableError("bad input")
    if ctx.attempt < int(params.get("fail_until_attempt", 0)):
        raise Transient(f"attempt {ctx.attempt} fails")
    if "result_bytes" in params:
        return pattern(int(params["result_bytes"]))
    if params.get("no_result"):
        return None
    if params.get("echo_parents"):
        parents = {name: [p.outcome, p.result] for name, p in ctx.parent_results.items()}
        return {"attempt": ctx.attempt, "parents": parents}
    return {"attempt": ctx.attempt}


def pattern(size: int) -> bytes:
    """``size`` bytes that no other file holds by chance: 0 to 250 over and over."""
    return (bytes(range(251)) * (size // 251 + 1))[:size]


@app.handler("data.async")
async def work_async(ctx: JobContext) -> dict[str, Any]:
    """Sleeps ``sleep_s`` on the event loop (a cancel interrupts it), then answers."""
    await asyncio.sleep(float(ctx.params.get("sleep_s", 0)))
    return {"attempt": ctx.attempt}
