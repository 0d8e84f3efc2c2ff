"""A scenario's offered load: when its jobs fall due, and how they are submitted.

Shared by jobstream's run (ops/bench/pipeline_run.py) and the Celery peer's
(ops/bench/peer/), so both systems are offered exactly the same jobs.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from jobstream._pipeline.clock import instant_of, now_ms
from jobstream._pipeline.scheduling.cron import CronSpec

CHUNK = 10_000
"""Most jobs submitted in one go."""
MINUTE_MS = 60_000
EVERY_MINUTE = "* * * * *"
"""The top of the hour's schedule: every minute at second 0, from the instant chosen, once."""
PACE_S = 0.05
"""How often a paced submitter looks for jobs whose time to be submitted has come: it
submits what came within the lead since its last look in one go, as a batching producer
would, rather than each job the moment its turn comes (at 1,200 jobs/s that was about
2.5 records a Produce request, a third of the broker's requests in a run)."""


@dataclass(frozen=True)
class Load:
    """When the scenario's jobs fall due, and how they are submitted."""

    scenario: str
    offsets_ms: list[int]
    """Due times from the first due time, sorted."""
    lead_s: float
    """Paced: each job is submitted this long before it is due. Otherwise: the first job
    falls due this long after submission starts, and all are submitted at once."""
    paced: bool
    owners: tuple[str, ...] = ()
    """Each job's owner, by index; empty: every job is the benchmark's one owner."""
    job_types: tuple[str, ...] = ()
    """Each job's type, by index; empty: every job is the handler's type."""
    recurring: bool = False
    """Cron jobs (every minute at second 0, one run from the first due time), whose first
    due time is the top of a minute, rather than one-off jobs."""

    @classmethod
    def steady(cls, rate: int, duration_s: float, lead_s: float) -> Load:
        _check(rate > 0 and duration_s > 0, "steady needs a rate and a duration above 0")
        _check(lead_s > 0, "the lead must be above 0")
        count = int(rate * duration_s)
        return cls("steady", [i * 1000 // rate for i in range(count)], lead_s, paced=True)

    @classmethod
    def burst(cls, count: int, lead_s: float | None) -> Load:
        # Submitting runs at ~15,000/s and the timers take ~9,000/s in: they must be done.
        _check(count > 0, "a burst needs at least one job")
        _check(lead_s is None or lead_s > 0, "the lead must be above 0")
        return cls("burst", [0] * count, lead_s or 10 + count / 5000, paced=False)

    @classmethod
    def backlog(cls, count: int, window_s: float, lead_s: float | None) -> Load:
        offsets = [int(i * window_s * 1000 / count) for i in range(count)]
        return cls("backlog", offsets, lead_s or 30 + count / 4500, paced=False)

    @classmethod
    def two_owners(cls, flood: int, small: int, lead_s: float | None) -> Load:
        """``flood`` jobs of owner-a, then ``small`` of owner-b, all due at one instant."""
        _check(flood > 0 and small > 0, "both owners need at least one job")
        _check(lead_s is None or lead_s > 0, "the lead must be above 0")
        owners = ("owner-a",) * flood + ("owner-b",) * small
        return cls("fairness", [0] * len(owners), lead_s or 10 + len(owners) / 5000,
                   paced=False, owners=owners)  # fmt: skip

    @classmethod
    def top_of_hour(cls, count: int, job_types: tuple[str, ...], owners: int,
                    lead_s: float | None) -> Load:  # fmt: skip
        """``count`` cron jobs all due at the top of one minute, of ``job_types`` and
        ``owners`` owners mixed: every owner has jobs of every type."""
        _check(count > 0, "the top of the hour needs at least one job")
        _check(bool(job_types) and owners > 0, "it needs job types and owners")
        _check(lead_s is None or lead_s > 0, "the lead must be above 0")
        names = [f"owner-{n:02}" for n in range(owners)]
        # A cron job's submission is checked slower than a one-off's (~700/s on two cores):
        # all must be in before the instant, or it measures late arrivals.
        return cls("top-of-hour", [0] * count, lead_s or 10 + count / 500, paced=False,
                   owners=tuple(names[i % owners] for i in range(count)),
                   job_types=tuple(job_types[(i // owners) % len(job_types)]
                                   for i in range(count)),
                   recurring=True)  # fmt: skip

    def first_due_ms(self, now: int) -> int:
        """When the first job falls due, submitting from ``now``: ``lead_s`` later, and for
        cron jobs at the top of the minute after that."""
        due = now + int(self.lead_s * 1000)
        return -(-due // MINUTE_MS) * MINUTE_MS if self.recurring else due

    def when(self, due_ms: int) -> dict[str, object]:
        """The JobRequest fields that make a job due at ``due_ms``."""
        if self.recurring:
            return {"cron": CronSpec(expression=EVERY_MINUTE, start_at_ms=due_ms, max_runs=1)}
        return {"run_at": instant_of(due_ms)}

    def chunks(self, t0_ms: int, halt: threading.Event,
               size: int = CHUNK) -> Iterator[tuple[int, int]]:  # fmt: skip
        """Index ranges ``[first, upto)`` of jobs to submit now, in order, until all are
        or ``halt`` is set. Paced, a job's turn comes ``lead_s`` before it falls due
        (jobs due at ``t0_ms + offsets_ms[i]``), and the jobs whose turn came are looked
        for every ``PACE_S``; otherwise all come at once."""
        done, total = 0, len(self.offsets_ms)
        lead_ms = int(self.lead_s * 1000)
        while done < total and not halt.is_set():
            upto = min(total, done + size)
            if self.paced:
                horizon = now_ms() - t0_ms + lead_ms
                upto = min(upto, bisect.bisect_right(self.offsets_ms, horizon, lo=done))
                if upto == done:
                    halt.wait(PACE_S)
                    continue
            yield done, upto
            done = upto
            if self.paced and done < total and self.offsets_ms[done] > horizon:
                halt.wait(PACE_S)  # caught up with the lead: the next look in a pace


def _check(ok: bool, problem: str) -> None:
    if not ok:
        raise ValueError(problem)
