"""From a run's jobs.events to its numbers: completions, losses, duplicates, lateness.

Pure: the run's submitted job ids and its decoded JobLifecycle events in, numbers out.

- *completed*: jobs with an event that ends them (:data:`jobstream._ops.bench.events.ENDED`);
  *lost*: submitted jobs without one.
- *duplicates*: runs beyond the first of one attempt of a job (two STARTED events for
  the same job and attempt: the job ran twice); *reported* duplicates are the status
  processor's DUPLICATE events, each an outcome it recognised as a second run's.
- *fire lateness*: FIRED ``at_ms`` minus ``scheduled_at_ms``; *start lateness*, per
  STARTED: when the run's handler began (the worker's clock), as its HEARTBEATs and end
  tell it (``launched_at_ms``), else the STARTED's ``at_ms`` (its claim; for a run claimed
  ahead, its due instant), minus the execution's ``scheduled_at_ms``; *end lateness*: the
  ending event's ``at_ms`` minus the job's first scheduled time; *start launches told*:
  how many of those figures are a launch a run told (the rest are STARTED's).
- *start lateness by owner*: the same, per owner (the fairness scenario's two owners).
- *jobs/s*: completed jobs over the span from the first job's due time to the last end,
  so a pipeline that keeps up shows the offered rate, and one that falls behind less.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from jobstream._ops.bench.events import ENDED
from jobstream._ops.bench.measure import summarize


def tally(submitted: Iterable[str], events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    wanted = set(submitted)
    starts: Counter[tuple[str, int]] = Counter()
    scheduled: dict[str, int] = {}
    ended: dict[str, int] = {}
    fire: list[int] = []
    begun: list[tuple[tuple[str, Any], int, int, str]] = []
    launched: dict[tuple[str, Any], int] = {}
    reported = 0
    for event in events:
        job_id, kind, at = str(event["job_id"]), event["kind"], int(event["at_ms"])
        if job_id not in wanted:
            continue
        run = (job_id, event.get("execution_id"))
        if event.get("launched_at_ms") is not None:
            launched.setdefault(run, int(event["launched_at_ms"]))
        if kind == "FIRED":
            fire.append(at - int(event["scheduled_at_ms"]))
            scheduled.setdefault(job_id, int(event["scheduled_at_ms"]))
        elif kind == "STARTED":
            starts[(job_id, int(event["attempt"]))] += 1
            begun.append((run, at, int(event["execution"]["scheduled_at_ms"]),
                          str(event.get("owner", ""))))  # fmt: skip
        elif kind == "DUPLICATE":
            reported += 1
        elif kind in ENDED:
            ended[job_id] = max(at, ended.get(job_id, at))
    duplicates = sum(n - 1 for n in starts.values())
    start: list[int] = []
    start_by_owner: dict[str, list[int]] = {}
    for run, at, due, owner in begun:
        start.append(launched.get(run, at) - due)
        start_by_owner.setdefault(owner, []).append(start[-1])
    told = sum(run in launched for run, *_ in begun)
    return {
        **endings(len(wanted), ended, scheduled, min(scheduled.values(), default=0)),
        "duplicates": duplicates,
        "duplicates_reported": reported,
        "duplicates_unreported": max(0, duplicates - reported),
        "fire_lateness_ms": summarize(fire),
        "start_lateness_ms": summarize(start),
        "start_launches_told": told,
        "start_lateness_by_owner_ms": {o: summarize(v) for o, v in sorted(start_by_owner.items())},
    }


def endings(submitted: int, ended: Mapping[Any, int], scheduled: Mapping[Any, int],
            first_due_ms: int) -> dict[str, Any]:  # fmt: skip
    """The numbers of how submitted jobs ended, from each ended job's last end instant and
    (where known) its scheduled time: shared with the Celery peer's tally."""
    last_end = max(ended.values(), default=0)
    span_s = max((last_end - first_due_ms) / 1000, 1e-3)
    return {
        "submitted": submitted,
        "completed": len(ended),
        "lost": submitted - len(ended),
        "jobs_per_s": len(ended) / span_s if ended else 0.0,
        "end_lateness_ms": summarize([ended[j] - scheduled[j] for j in ended if j in scheduled]),
        "first_due_ms": first_due_ms,
        "last_end_ms": last_end,
    }
