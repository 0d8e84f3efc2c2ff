"""Runs a recurring schedule missed while the scheduler was down: which to run now.

Everything is on the fire timeline of jobstream._pipeline.scheduling.cron (nominal + jitter), the
instants
the timer store keys on and execution ids name. A fire ``F`` with ``last_due_ms < F <= now_ms``
is *due*; it is *on time* when ``now_ms - F <= grace_ms`` (ordinary polling lateness, not a
misfire) and *missed* otherwise. On-time fires always run; ``spec.misfire`` decides the rest:

- ``SKIP``: missed fires are dropped; only on-time fires run.
- ``RUN_ONCE``: all due fires collapse into one run, named by the latest due fire.
- ``RUN_ALL``: each due fire with ``F >= now_ms - max(catchup_window_ms, grace_ms)`` runs,
  oldest first, at most ``MAX_CATCHUP_RUNS``; fires past the cap are dropped (the schedule would
  otherwise flood the workers after a long outage of a frequent schedule).

Dropped fires are not runs: they do not count towards ``max_runs``. No more runs than
``max_runs - runs_so_far`` are returned (SKIP and RUN_ALL keep the oldest, the ones the schedule
would have run), and none after ``end_at_ms``. ``next_due_ms`` is the first fire strictly after
``max(now_ms, last_due_ms)``, counting the returned runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from jobstream._pipeline.scheduling.cron import (
    CronSpec,
    MisfirePolicy,
    iter_occurrences,
    next_due_ms,
)

logger = logging.getLogger(__name__)

MAX_CATCHUP_RUNS = 1000
"""RUN_ALL never returns more runs than this at once."""

DEFAULT_GRACE_MS = 60_000
"""A fire at most this late is on time, whatever the misfire policy."""

_FIRST_SPAN_MS = 60_000


@dataclass(frozen=True)
class DueRuns:
    """What a timer does after an outage: run these now, then wait for the next fire."""

    run_now: tuple[int, ...]
    """Fire instants (epoch ms) to run now, oldest first; each names one execution."""
    next_due_ms: int | None
    """The next fire strictly after now; None when the schedule has ended."""


def due_runs(
    spec: CronSpec,
    *,
    last_due_ms: int,
    now_ms: int,
    job_id: str,
    runs_so_far: int,
    grace_ms: int = DEFAULT_GRACE_MS,
) -> DueRuns:
    """Apply the misfire policy to the fires in (last_due_ms, now_ms].

    ``last_due_ms`` is the last fire already handled (a pending timer at ``F`` passes
    ``F - 1``); ``runs_so_far`` counts runs before this call.
    """
    if grace_ms < 0:
        raise ValueError("grace_ms must be >= 0")
    left = None if spec.max_runs is None else max(0, spec.max_runs - runs_so_far)
    run_now: tuple[int, ...] = ()
    if now_ms > last_due_ms and left != 0:
        if spec.misfire == MisfirePolicy.SKIP:
            since = max(last_due_ms, now_ms - grace_ms - 1)
            run_now = _fires(spec, since, now_ms, job_id, _limit(left))
        elif spec.misfire == MisfirePolicy.RUN_ONCE:
            latest = _latest_fire(spec, last_due_ms, now_ms, job_id)
            run_now = () if latest is None else (latest,)
        else:
            window = max(spec.catchup_window_ms, grace_ms)
            since = max(last_due_ms, now_ms - window - 1)
            limit = _limit(left)
            run_now = _fires(spec, since, now_ms, job_id, limit + 1)
            if len(run_now) > limit:
                if limit == MAX_CATCHUP_RUNS:
                    logger.warning(
                        "catch-up capped",
                        extra={"job_id": job_id, "cap": MAX_CATCHUP_RUNS},
                    )
                run_now = run_now[:limit]
    after = max(now_ms, last_due_ms)
    following = next_due_ms(spec, after, job_id=job_id, runs_so_far=runs_so_far + len(run_now))
    return DueRuns(run_now=run_now, next_due_ms=following)


def _limit(left: int | None) -> int:
    return MAX_CATCHUP_RUNS if left is None else min(left, MAX_CATCHUP_RUNS)


def _fires(
    spec: CronSpec, after_ms: int, until_ms: int, job_id: str, limit: int
) -> tuple[int, ...]:
    """Up to ``limit`` fires in (after_ms, until_ms], oldest first."""
    fires: list[int] = []
    for occurrence in iter_occurrences(spec, after_ms, job_id=job_id):
        if occurrence.due_ms > until_ms or len(fires) >= limit:
            break
        fires.append(occurrence.due_ms)
    return tuple(fires)


def _latest_fire(spec: CronSpec, after_ms: int, until_ms: int, job_id: str) -> int | None:
    """The last fire in (after_ms, until_ms], looking back over doubling spans.

    Walking forward from after_ms would cost one step per missed fire (a minutely schedule
    down for a month is 43,200 steps); doubling spans cost about twice the fires in the
    last span searched.
    """
    span = _FIRST_SPAN_MS
    while True:
        since = max(after_ms, until_ms - span)
        latest = None
        for occurrence in iter_occurrences(spec, since, job_id=job_id):
            if occurrence.due_ms > until_ms:
                break
            latest = occurrence.due_ms
        if latest is not None or since == after_ms:
            return latest
        span *= 2
