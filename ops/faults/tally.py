"""From a fault run's records to its numbers. Pure: no clock, no Kafka.

Inputs: the submitted jobs (id -> due time), jobs.events as seen (each event with the
instant the reader saw it), the handler-side record of runs, and when the fault began.

- *ended*: jobs with a terminal event (SUCCEEDED, DEAD_LETTERED, CANCELLED, EXPIRED); *lost*:
  submitted jobs without one.
- *run more than once*: jobs whose handler ran one execution twice (a redelivery), or
  succeeded in two executions (a zombie's run and its retry's). A run that failed on
  purpose and its retry are not a duplicate.
- *flagged*: jobs with a DUPLICATE event, the status processor's account of a second
  outcome, or with a LOST one, its account of a run whose outcome never came (the job's
  next attempt runs again what that run may have done); *unflagged*: jobs run more than
  once without either, the runs nobody was told of.
- *start lateness*: when a job's first run's handler began minus its due time: the
  launch its worker tells on the run's HEARTBEATs and end (``launched_at_ms``), or its
  STARTED's ``at_ms`` for a run that tells none (ended before a heartbeat, its worker
  crashed, or a worker before that field), per execution; the earliest of the job's.
- *overlapping runs*: jobs two of whose runs worked at once, by the handler-side record
  of a long run's first and last step (a zombie working on beside its retry).
- *started early*: jobs whose handler began (by the machine's clock, the handler-side
  record) more than :data:`EARLY_BOUND_MS` before their due time; *earliest start*: the
  least of those differences over every job (negative: before its instant).
- *stall*: the longest span in which at least one due job was pending and none ended
  (ends as seen by the reader); *recovery*: from the fault to the first end seen after
  it; *recovery of new jobs*: to the first end of a job due after the fault began, which
  the parts still running cannot have had in hand already.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from jobstream._ops.faults.journal import Run
from jobstream._ops.faults.observer import ENDED, Seen

EARLY_BOUND_MS = 250
"""How early a handler may begin before it counts as started early: a process reads the
cluster's clock within its estimate's error (half a probe's round trip: a few ms on an idle
machine, tens loaded; pipeline/clock_offset.py)."""
SHOWN_IDS = 10
"""Job ids listed per finding, as evidence to look up in the logs and topics."""


def tally(due: Mapping[str, int], seen: Iterable[Seen], runs: Sequence[Run], *,
          fault_ms: int | None, until_ms: int) -> dict[str, Any]:  # fmt: skip
    """The run's numbers; ``until_ms`` is when observation stopped (a stall still open
    then is counted up to it)."""
    first_end: dict[str, int] = {}
    claimed: dict[tuple[str, str | None], int] = {}  # each execution's first STARTED at_ms
    launched: dict[tuple[str, str | None], int] = {}  # its launch, as its worker told it
    dead_lettered, flagged, lost_leases, disturbed = set(), set(), set(), set()
    starts: Counter[str] = Counter()
    for item in seen:
        event, job_id = item.event, item.event["job_id"]
        if job_id not in due:
            continue
        kind, execution = event["kind"], (job_id, event.get("execution_id"))
        if event.get("launched_at_ms") is not None:
            launched.setdefault(execution, event["launched_at_ms"])
        if kind in ENDED:
            first_end.setdefault(job_id, item.seen_ms)
            if kind == "DEAD_LETTERED":
                dead_lettered.add(job_id)
        elif kind == "STARTED":
            starts[job_id] += 1
            claimed[execution] = min(claimed.get(execution, event["at_ms"]), event["at_ms"])
        elif kind == "DUPLICATE":
            flagged.add(job_id)
        elif kind == "LOST":
            lost_leases.add(job_id)
            flagged.add(job_id)
        if (event.get("attempt") or 0) > 1 or kind == "LOST":
            disturbed.add(job_id)
    disturbed |= {job_id for job_id, n in starts.items() if n > 1}
    twice = run_more_than_once(runs, due)
    lost = sorted(set(due) - set(first_end))
    unflagged = sorted(twice - flagged)
    first_start: dict[str, int] = {}
    for execution, at in claimed.items():
        began = launched.get(execution, at)
        first_start[execution[0]] = min(first_start.get(execution[0], began), began)
    late = sorted(first_start[j] - due[j] for j in first_start)
    earliest = earliest_starts(runs, due)
    overlapping = overlapping_runs(runs, due)
    early = sorted(job_id for job_id, ahead in earliest.items() if ahead < -EARLY_BOUND_MS)
    stall_ms, stall_from = longest_stall(due, first_end, until_ms)
    after = [t for t in first_end.values() if fault_ms is not None and t >= fault_ms]
    new = [t for j, t in first_end.items() if fault_ms is not None and due[j] >= fault_ms]
    lateness = {"p50": _quantile(late, 0.5), "p99": _quantile(late, 0.99),
                "max": late[-1] if late else None}  # fmt: skip
    shown = {"lost": lost, "unflagged": unflagged, "run_more_than_once": sorted(twice),
             "flagged": sorted(flagged), "started_early": early,
             "overlapping_runs": overlapping}  # fmt: skip
    return {
        "submitted": len(due),
        "ended": len(first_end),
        "dead_lettered": len(dead_lettered),
        "lost": len(lost),
        "run_more_than_once": len(twice),
        "flagged": len(flagged),
        "unflagged_duplicate_runs": len(unflagged),
        "disturbed": len(disturbed),
        "lost_leases": len(lost_leases),
        "start_lateness_ms": lateness,
        "overlapping_runs": len(overlapping),
        "started_early": len(early),
        "earliest_start_ms": min(earliest.values(), default=None),
        "stall_ms": stall_ms,
        "stall_from_fault_ms": _since(fault_ms, stall_from),
        "recovery_ms": _since(fault_ms, min(after, default=None)),
        "recovery_new_jobs_ms": _since(fault_ms, min(new, default=None)),
        "ids": {name: ids[:SHOWN_IDS] for name, ids in shown.items()},
    }


def poison_tally(poison: Mapping[str, int], due: Mapping[str, int], seen: Iterable[Seen],
                 cancelled_at: Mapping[str, int] | None = None) -> dict[str, Any]:  # fmt: skip
    """How a poison scenario's poison jobs ended, and how often the other jobs started:
    a poison job that kills its worker or hangs should end DEAD_LETTERED after one start
    per attempt, a cancelled one CANCELLED (within how long of its cancel, from
    ``cancelled_at``), and no other job start more than twice (its own run, and one retry
    after its process died)."""
    starts: Counter[str] = Counter()
    ends: dict[str, str] = {}
    ended_ms: dict[str, int] = {}
    for item in seen:
        job_id, kind = item.event["job_id"], item.event["kind"]
        if kind == "STARTED":
            starts[job_id] += 1
        elif kind in ENDED:
            ends.setdefault(job_id, kind)
            ended_ms.setdefault(job_id, item.seen_ms)
    others = [starts[job_id] for job_id in due]
    many = sorted(job_id for job_id in due if starts[job_id] > 2)
    return {
        "jobs": len(poison),
        "ended": dict(sorted(Counter(ends.get(job_id, "none") for job_id in poison).items())),
        "cancelled_within_ms": sorted(
            ended_ms[job_id] - at
            for job_id, at in (cancelled_at or {}).items()
            if job_id in ended_ms
        ),
        "starts": sorted(starts[job_id] for job_id in poison),
        "most_starts_of_another_job": max(others, default=0),
        "other_jobs_started_twice": sum(n == 2 for n in others),
        "ids_started_more_than_twice": many[:SHOWN_IDS],
    }


def histories(job_ids: Iterable[str], seen: Iterable[Seen], runs: Iterable[Run],
              origin_ms: int) -> dict[str, dict[str, list[str]]]:  # fmt: skip
    """What jobs.events and the handler-side record hold of each job, one line per
    event or run, times in seconds from ``origin_ms``: the evidence for a finding."""
    wanted = set(job_ids)
    found: dict[str, dict[str, list[str]]] = {j: {"events": [], "runs": []} for j in wanted}

    def at(ms: int) -> str:
        return f"{(ms - origin_ms) / 1000:.3f}s"

    for item in seen:
        event = item.event
        if event["job_id"] in wanted:
            found[event["job_id"]]["events"].append(
                f"{event['kind']} at {at(event['at_ms'])} seen {at(item.seen_ms)} attempt "
                f"{event.get('attempt')} epoch {event.get('epoch')} execution "
                f"{event.get('execution_id')} worker {event.get('worker_id')}"
                + (f" ({event['detail']})" if event.get("detail") else "")
            )
    for run in runs:
        if run.job_id in wanted:
            found[run.job_id]["runs"].append(
                f"{'ran' if run.ok else 'failed'} {at(run.start_ms)}-{at(run.end_ms)} "
                f"execution {run.execution_id} worker {run.worker_id} pid {run.pid}"
            )
    return found


def _since(start_ms: int | None, at_ms: int | None) -> int | None:
    return None if start_ms is None or at_ms is None else at_ms - start_ms


def run_more_than_once(runs: Iterable[Run], due: Mapping[str, int]) -> set[str]:
    """Jobs with an execution run twice, or successful runs of two executions."""
    per_execution: Counter[tuple[str, str]] = Counter()
    succeeded: defaultdict[str, set[str]] = defaultdict(set)
    for run in runs:
        if run.job_id not in due:
            continue
        per_execution[(run.job_id, run.execution_id)] += 1
        if run.ok:
            succeeded[run.job_id].add(run.execution_id)
    twice = {job_id for (job_id, _), n in per_execution.items() if n > 1}
    return twice | {job_id for job_id, executions in succeeded.items() if len(executions) > 1}


def overlapping_runs(runs: Iterable[Run], due: Mapping[str, int]) -> list[str]:
    """Jobs two of whose recorded runs worked at once (machine clock, first to last step)."""
    spans: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    for run in runs:
        first, last = run.machine_start_ms, run.machine_end_ms
        if run.job_id in due and first is not None and last is not None:
            spans[run.job_id].append((first, last))
    found = []
    for job_id, worked in spans.items():
        worked.sort()
        if any(later[0] < earlier[1] for earlier, later in pairwise(worked)):
            found.append(job_id)
    return sorted(found)


def earliest_starts(runs: Iterable[Run], due: Mapping[str, int]) -> dict[str, int]:
    """Each job's first handler start by the machine's clock, minus its due time."""
    first: dict[str, int] = {}
    for run in runs:
        if run.job_id in due and run.machine_start_ms is not None:
            first[run.job_id] = min(first.get(run.job_id, run.machine_start_ms),
                                    run.machine_start_ms)  # fmt: skip
    return {job_id: start - due[job_id] for job_id, start in first.items()}


def longest_stall(due: Mapping[str, int], ended: Mapping[str, int],
                  until_ms: int) -> tuple[int, int | None]:  # fmt: skip
    """The longest span with a due job pending and no end, and when it began.

    A job is pending from its due time until its end; a span begins when a job falls due
    while none is pending, or at an end that leaves some pending, and lasts until the next
    end (or ``until_ms``).
    """
    # At equal instants ends come first: a job due as another ends starts no new span.
    moments = sorted([(t, 0) for t in ended.values()] + [(t, 1) for t in due.values()])
    pending, began, longest, longest_from = 0, 0, 0, None
    for at, is_due in moments:
        if is_due:
            if pending == 0:
                began = at
            pending += 1
            continue
        if pending > 0 and at - began > longest:
            longest, longest_from = at - began, began
        pending = max(pending - 1, 0)
        began = at
    if pending > 0 and until_ms - began > longest:
        longest, longest_from = until_ms - began, began
    return longest, longest_from


def _quantile(values: list[int], q: float) -> int | None:
    """Nearest-rank quantile of sorted ``values``."""
    if not values:
        return None
    return values[min(len(values) - 1, max(0, round(q * len(values)) - 1))]
