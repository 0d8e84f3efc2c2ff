"""The worker app of ``jobstream faults grow-events``: one job type whose runs sleep.

``jobstream worker --app jobstream._ops.faults.sleep_app``. A run sleeps ``sleep_s``
(``first_attempt_sleep_s`` on its first attempt, when given), heartbeating as every run
does, and returns its attempt: a long first attempt is a run a killed worker leaves behind,
its retry a quick one. With ``{"fail_first": true}`` the first attempt fails (retryable)
after its sleep: the retry router's work.
"""

from __future__ import annotations

import time

from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.worker import JobContext, WorkerApp

JOB_TYPE = "grow.sleep"

app = WorkerApp()


class FirstAttemptFails(JobstreamError):
    """The failure of a ``fail_first`` job's first attempt."""

    retryable = True


@app.handler(JOB_TYPE)
def sleep(ctx: JobContext) -> dict[str, int]:
    params = ctx.params
    seconds = params.get("sleep_s", 0)
    if ctx.attempt == 1:
        seconds = params.get("first_attempt_sleep_s", seconds)
    time.sleep(float(seconds))
    if params.get("fail_first") and ctx.attempt == 1:
        raise FirstAttemptFails("the first attempt fails, the second succeeds")
    return {"attempt": ctx.attempt}
