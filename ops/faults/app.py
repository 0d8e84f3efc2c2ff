"""The fault runs' worker app: one job type whose handler records every run it makes.

``jobstream worker --app jobstream._ops.faults.app``. The handler sleeps 10 ms (long enough for a
kill to land while jobs run, short enough to keep the worker's CPU low), then appends its
run to the handler-side record (ops/faults/journal.py). A job with
``{"fail_until_attempt": n}`` raises a retryable error on attempts below ``n``, which
gives the retry router work to be killed in the middle of. A poison job (``{"poison":
kind}``, :data:`POISONS`) takes its worker down instead: ``kill`` SIGKILLs the process at
once, as a segfault would; ``kill-mid-run`` after :data:`POISON_DELAY_S`, while the jobs
beside it run; ``hang`` never returns (run with ``--isolation process``, whose timeout
kills it); ``cancel`` waits until the run is cancelled. It records no run: it never gets
to the end of one. In a workflow (ops/faults/workflows.py) a job returns what the steps
after it read: a list to map (``emit``), an item's own value, or, for a join, how many
item results it checked.
"""

from __future__ import annotations

import os
import signal
import time

from jobstream._ops.faults.journal import Journal, Run, machine_now_ms
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import JobstreamError, NonRetryableError
from jobstream._pipeline.worker import JobContext, WorkerApp

JOB_TYPE = "faults.record"
SLEEP_S = 0.01
FAIL_UNTIL_ATTEMPT = "fail_until_attempt"
POISON = "poison"
POISON_DELAY_S = 0.5
POISONS = ("kill", "kill-mid-run", "hang", "cancel")
WORK_MS = "work_ms"
"""``{"work_ms": n}``: a long run, n ms of work in steps of :data:`STEP_S`, each done only
while the run holds its lease (``ctx.lease_ok``): the handler-side record keeps when its
first and last steps were, so a zombie's work beside its retry's shows."""
STEP_S = 0.05
EMIT = "emit"
"""``{"emit": n}``: the run returns the list 0..n-1 (what a map step maps)."""
JOIN = "join"
"""``{"join": "map", "items": n}``: the run checks its parent map's n item results."""

app = WorkerApp()
journal = Journal()


class PlannedFailure(JobstreamError):
    """The failure a job asked for on an early attempt; another attempt succeeds."""

    retryable = True


@app.handler(JOB_TYPE, timeout_s=30)
def record(ctx: JobContext) -> object:
    start_ms, machine_start_ms = now_ms(), machine_now_ms()
    poison = ctx.params.get(POISON)
    if poison == "hang":
        while True:
            time.sleep(1)
    if poison == "cancel":
        ctx.wait_cancelled(600)
        return None
    if poison is not None:
        time.sleep(POISON_DELAY_S if poison == "kill-mid-run" else 0)
        os.kill(os.getpid(), signal.SIGKILL)
    if WORK_MS in ctx.params:
        _work(ctx, int(ctx.params[WORK_MS]), start_ms, machine_start_ms)
        return None
    time.sleep(SLEEP_S)
    if not ctx.lease_ok:  # the worker stopped the run: its retry may run now
        return None
    ok = ctx.attempt >= int(ctx.params.get(FAIL_UNTIL_ATTEMPT, 0))
    joined = _join(ctx)
    journal.append(Run(job_id=ctx.job_id, execution_id=ctx.execution_id, attempt=ctx.attempt,
                       worker_id=ctx.worker_id, start_ms=start_ms,
                       machine_start_ms=machine_start_ms,
                       end_ms=now_ms(), pid=os.getpid(), ok=ok))  # fmt: skip
    if not ok:
        raise PlannedFailure(f"attempt {ctx.attempt} fails as the job asked")
    if EMIT in ctx.params:
        return list(range(int(ctx.params[EMIT])))
    return ctx.params.get("item", joined)


def _work(ctx: JobContext, work_ms: int, start_ms: int, machine_start_ms: int) -> None:
    """A long run's steps, each while the run holds its lease; recorded however it ends."""
    journal.begin_long(ctx.worker_id)
    last = machine_start_ms
    until = time.monotonic() + work_ms / 1000
    finished = False
    while ctx.lease_ok and not ctx.cancelled:
        if time.monotonic() >= until:
            finished = True
            break
        time.sleep(STEP_S)
        if ctx.lease_ok:  # the step's side effect, only under the lease
            last = machine_now_ms()
    journal.append(Run(job_id=ctx.job_id, execution_id=ctx.execution_id, attempt=ctx.attempt,
                       worker_id=ctx.worker_id, start_ms=start_ms, end_ms=now_ms(),
                       pid=os.getpid(), ok=finished, machine_start_ms=machine_start_ms,
                       machine_end_ms=last))  # fmt: skip


class MapOutOfOrder(NonRetryableError):
    """A join saw its map's items other than each once, in order: the scenario fails."""


def _join(ctx: JobContext) -> int | None:
    """A join of map ``ctx.params["join"]`` checks it got every item's result, in order
    (each item returns its own value: its index)."""
    name = ctx.params.get(JOIN)
    if name is None:
        return None
    items = [result.result for step, result in ctx.parent_results.items()
             if step.startswith(f"{name}[")]  # fmt: skip
    if items != list(range(len(items))) or len(items) != int(ctx.params["items"]):
        raise MapOutOfOrder(f"{len(items)} item results, not 0..{ctx.params['items'] - 1} "
                            "in order")  # fmt: skip
    return len(items)
