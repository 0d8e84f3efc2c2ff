"""From a run's jobs.events to its numbers: completions, losses, duplicates, lateness.

Pure: the run's submitted job ids and its decoded JobLifecycle events in, numbers out.

- *completed*: jobs with an event that ends them (:data:`jobstream._ops.bench.events.ENDED`);
  *lost*: submitted jobs without one.
- *duplicates*: runs beyond the first of one attempt of a job (two STARTED events for
  the same job and attempt: the job ran twice); *reported* duplicates are the status
  processor's DUPLICATE events, each an outcome it recognised as a second run's.
- *fire lateness*: FIRED ``at_ms`` minus ``scheduled_at_ms``; *start lateness*: STARTED
  ``at_ms`` (the worker's clock when it started the handler) minus the execution's
  ``scheduled_at_ms``; *end lateness*: the ending event's ``at_ms`` minus the job's
  first scheduled time.
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
    fire, start = [], []
    start_by_owner: dict[str, list[int]] = {}
    reported = 0
    for event in events:
        job_id, kind, at = str(event["job_id"]), event["kind"], int(event["at_ms"])
        if job_id not in wanted:
            continue
        if kind == "FIRED":
            fire.append(at - int(event["scheduled_at_ms"]))
            scheduled.setdefault(job_id, int(event["scheduled_at_ms"]))
        elif kind == "STARTED":
            starts[(job_id, int(event["attempt"]))] += 1
            start.append(at - int(event["execution"]["scheduled_at_ms"]))
            start_by_owner.setdefault(str(event.get("owner", "")), []).append(start[-1])
        elif kind == "DUPLICATE":
            reported += 1
        elif kind in ENDED:
            ended[job_id] = max(at, ended.get(job_id, at))
    duplicates = sum(n - 1 for n in starts.values())
    return {
        **endings(len(wanted), ended, scheduled, min(scheduled.values(), default=0)),
        "duplicates": duplicates,
        "duplicates_reported": reported,
        "duplicates_unreported": max(0, duplicates - reported),
        "fire_lateness_ms": summarize(fire),
        "start_lateness_ms": summarize(start),
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
