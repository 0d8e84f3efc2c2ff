"""The benchmark's worker app: handlers that cost as little as a handler can.

- ``bench.noop`` returns at once: what is measured is the scheduler, not the job.
- ``bench.sleep10`` waits 10 ms without holding a thread (an async handler), like a job
  that calls another service.
- ``bench.hourly.t00`` to ``t49``: the top of the hour's 50 types, each a no-op.
"""

from __future__ import annotations

import asyncio

from jobstream._pipeline.worker import JobContext, WorkerApp

NOOP = "bench.noop"
SLEEP10 = "bench.sleep10"
HANDLERS = {"noop": NOOP, "sleep10": SLEEP10}
"""The ``--handler`` choices of ``jobstream bench`` and the job type each one runs."""
HOURLY_TYPES = tuple(f"bench.hourly.t{n:02}" for n in range(50))
"""The top of the hour's 50 job types, each a no-op."""

app = WorkerApp()


@app.handler(NOOP)
def noop(ctx: JobContext) -> None:
    return None


for hourly in HOURLY_TYPES:
    app.handler(hourly)(noop)


@app.handler(SLEEP10)
async def sleep10(ctx: JobContext) -> None:
    await asyncio.sleep(0.01)
