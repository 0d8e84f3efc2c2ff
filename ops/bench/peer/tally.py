"""From a run's journal to its numbers: completions, losses, duplicates, lateness.

Pure: the number submitted (job ids are ``0 .. submitted-1``), the start and end
records in, numbers out, defined as jobstream's tally (ops/bench/tally.py) defines them
so that the two can be set side by side:

- *completed*: jobs with an end record (the task body returned); *lost*: submitted
  jobs without one;
- *duplicates*: starts beyond the first of one job (the job ran twice);
- *start lateness*: started minus scheduled, for every start (a duplicate's too);
  *end lateness*: a completed job's last end minus its scheduled time;
- *jobs/s*: completed jobs over the span from the first job's due time to the last end,
  so a system that keeps up shows the offered rate, and one that falls behind less.

``fire_lateness_ms`` is None: Celery has no firing separate from starting the task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from jobstream._ops.bench.measure import summarize
from jobstream._ops.bench.tally import endings

Row = tuple[int, int, int]
"""(job_id, due_ms, at_ms)"""


def tally(submitted: int, first_due_ms: int, starts: Iterable[Row],
          ends: Iterable[Row]) -> dict[str, Any]:  # fmt: skip
    runs: Counter[int] = Counter()
    start_lateness: list[float] = []
    for job_id, due_ms, started_ms in starts:
        if 0 <= job_id < submitted:
            runs[job_id] += 1
            start_lateness.append(started_ms - due_ms)
    ended: dict[int, int] = {}
    scheduled: dict[int, int] = {}
    for job_id, due_ms, ended_ms in ends:
        if 0 <= job_id < submitted:
            ended[job_id] = max(ended_ms, ended.get(job_id, ended_ms))
            scheduled[job_id] = due_ms
    return {
        **endings(submitted, ended, scheduled, first_due_ms),
        "duplicates": sum(n - 1 for n in runs.values()),
        "fire_lateness_ms": None,
        "start_lateness_ms": summarize(start_lateness),
    }
