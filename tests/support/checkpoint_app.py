"""Handlers that save checkpoints and resume from them (``ctx.checkpoint``, ``ctx.resume_from``).

``ckpt.steps`` (served with threads) and ``ckpt.isolated`` (served with ``--isolation
process``) count 100 steps of ``pause_s`` each from where the last checkpoint left them
(``{"done": <steps>}``), saving one every ``every`` steps (10 by default) and reporting
each step as progress (its message names the process that runs it). On its first attempt
it stops at ``hold_at`` (a step) for ``hold_s``, there to be killed, or fails there with
``fail_at``. It answers where it began, each attempt's, and its process.
``ckpt.async`` does the same steps from an ``async def`` (``acheckpoint``); ``ckpt.bytes``
saves its count as 4 bytes; ``ckpt.bad`` saves ``params["state"]`` (or an object, or
``size`` bytes) and answers what the call raised.
"""

from __future__ import annotations

import os
import time
from typing import Any

from jobstream import JobContext, WorkerApp

app = WorkerApp()
STEPS = 100


def _start(ctx: JobContext) -> int:
    return int((ctx.resume_from or {}).get("done", 0))


def _stop_here(ctx: JobContext, step: int) -> None:
    """Where a first attempt is held (to be killed) or fails."""
    params = ctx.params
    if ctx.attempt > 1:
        return
    if step == params.get("hold_at"):
        time.sleep(float(params.get("hold_s", 600)))
    if step == params.get("fail_at"):
        raise RuntimeError(f"failed at step {step}")


def steps(ctx: JobContext) -> dict[str, Any]:
    start, every = _start(ctx), int(ctx.params.get("every", 10))
    pause_s = float(ctx.params.get("pause_s", 0))
    for step in range(start + 1, STEPS + 1):
        time.sleep(pause_s)
        if step % every == 0:
            ctx.checkpoint({"done": step})
        ctx.progress(step / STEPS, f"step {step} in {os.getpid()}")
        _stop_here(ctx, step)
    return {"began_at": start, "attempt": ctx.attempt, "pid": os.getpid()}


app.handler("ckpt.steps")(steps)
app.handler("ckpt.isolated")(steps)


@app.handler("ckpt.async")
async def steps_async(ctx: JobContext) -> dict[str, Any]:
    start = _start(ctx)
    for step in range(start + 1, STEPS + 1):
        if step % 10 == 0:
            await ctx.acheckpoint({"done": step})
        await ctx.aprogress(step / STEPS)
        _stop_here(ctx, step)
    return {"began_at": start, "attempt": ctx.attempt}


@app.handler("ckpt.bytes")
def count_bytes(ctx: JobContext) -> dict[str, Any]:
    start = int.from_bytes(ctx.resume_from or b"\0\0\0\0", "big")
    for step in range(start + 1, STEPS + 1):
        if step % 10 == 0:
            ctx.checkpoint(step.to_bytes(4, "big"))
        _stop_here(ctx, step)
    return {"began_at": start}


@app.handler("ckpt.bad")
def bad(ctx: JobContext) -> str:
    params = ctx.params
    state = params["state"] if "state" in params else b"x" * params.get("size", 0) or object()
    try:
        ctx.checkpoint(state)
    except ValueError as exc:
        return f"refused: {exc}"
    return "saved"
