"""The schedules: recurring jobs and recurring workflows not ended, an owner's newest first.

Each has an ``R`` entry (connectors/views/layout.py): a recurring job's while it has not
ended (:func:`layout.index_keys` keeps it with its document), a recurring workflow's from
its template's submission until its cancel. A recurring workflow has no jobs.status
record, so the views keep its template's schedule (``W``) themselves; its runs are
workflows of their own whose steps carry the label ``jobstream.schedule=<its id>``, found
through the label index (:func:`workflow_runs`).

Listing is a prefix scan of ``R`` (of one owner, or of all of them, owner by owner), a
page at a time; the cursor is the position in that prefix (URL-safe base64), so it cannot
reach outside it. What is shown of each, its next runs computed from its schedule and its
last runs, is the API's (connectors/api/schedules.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from jobstream._connectors.views import fold, layout
from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES
from jobstream._pipeline.scheduling.cron import CronSpec, iter_occurrences
from jobstream._pipeline.workflows.runs import RUN_LABEL

RUNS_SCANNED = 200
"""Jobs of a recurring workflow's runs read to find its latest runs (newest first)."""
_WORST = ("DEAD_LETTERED", "CANCELLED", "SUCCEEDED")


@dataclass(frozen=True)
class Schedule:
    """One entry of the listing: a recurring job's document or a workflow's schedule."""

    kind: str
    """``job`` or ``workflow``."""
    owner: str
    held: dict[str, Any]


@dataclass(frozen=True)
class SchedulePage:
    items: list[Schedule]
    next_cursor: str | None


def _a_schedule_key(position: bytes) -> bool:
    return len(position) >= 10  # at least a >Q, a kind and one byte of an id


def list_schedules(store: ViewStore, owner: str | None, *, limit: int = 50,
                   cursor: str | None = None) -> SchedulePage:  # fmt: skip
    """The schedules of ``owner`` (every owner's when None), newest first."""
    prefix = layout.schedule_prefix(owner)
    lower = prefix
    if cursor is not None:
        lower = prefix + layout.decode_cursor(cursor, _a_schedule_key) + b"\x00"
    items: list[Schedule] = []
    last = lower
    for key, _ in store.scan(lower, layout.upper_bound(prefix)):
        if len(items) >= limit:
            return SchedulePage(items, layout.encode_cursor(last[len(prefix) :]))
        last = key
        found = _read(store, key)
        if found is not None:
            items.append(found)
    return SchedulePage(items, None)


def _read(store: ViewStore, key: bytes) -> Schedule | None:
    owner, kind, schedule_id = layout.schedule_parts(key)
    if kind == layout.SCHEDULE_JOB:
        doc = store.doc(schedule_id)
        return None if doc is None else Schedule("job", owner, doc)
    raw = store.get(layout.workflow_schedule_key(owner, schedule_id))
    return None if raw is None else Schedule("workflow", owner, fold.loads(raw))


def next_runs(cron: Mapping[str, Any], *, after_ms: int, schedule_id: str, runs: int = 0,
              count: int = 5) -> list[int]:  # fmt: skip
    """The next ``count`` fire instants of a schedule after ``after_ms`` (its max_runs
    counted from ``runs`` already made); fewer when it ends first."""
    spec = CronSpec.from_avro(cron)
    if spec.max_runs is not None:
        count = max(0, min(count, spec.max_runs - runs))
    occurrences = islice(iter_occurrences(spec, after_ms, job_id=schedule_id), count)
    return [occurrence.due_ms for occurrence in occurrences]


def workflow_runs(store: ViewStore, owner: str, workflow_id: str,
                  count: int = 5) -> list[dict[str, Any]]:  # fmt: skip
    """A recurring workflow's latest ``count`` runs, newest first: the run's id, when it
    started, how it ended (the worst of its steps: DEAD_LETTERED, CANCELLED, SUCCEEDED;
    RUNNING while a step has not ended) and when."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for doc in islice(_run_steps(store, owner, workflow_id), RUNS_SCANNED):
        run_id = doc.get("workflow_id")
        if run_id is None:
            continue
        if run_id not in runs and len(runs) >= count:
            break
        runs.setdefault(run_id, []).append(doc)
    return [_run(run_id, steps) for run_id, steps in runs.items()]


def _run_steps(store: ViewStore, owner: str, workflow_id: str) -> Iterator[dict[str, Any]]:
    index = layout.choose_index({"owner": owner, "label": ""})
    prefix = index.prefix({"owner": owner, "label": f"{RUN_LABEL}={workflow_id}"})
    for key, _ in store.scan(prefix, layout.upper_bound(prefix)):
        doc = store.doc(layout.job_id_of(key))
        if doc is not None:
            yield doc


def _run(run_id: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    ended = all(step["state"] in TERMINAL_STATES for step in steps)
    outcome = "RUNNING"
    if ended:
        outcome = next(state for state in _WORST if any(s["state"] == state for s in steps))
    return {
        "run_id": run_id, "started_at_ms": min(step["created_at_ms"] for step in steps),
        "outcome": outcome, "steps": len(steps),
        "ended_at_ms": max(step["ended_at_ms"] or 0 for step in steps) if ended else None,
    }  # fmt: skip


def workflow_schedules(store: ViewStore, workflow_id: str,
                       owner: str | None) -> list[dict[str, Any]]:  # fmt: skip
    """The recurring workflows of id ``workflow_id`` not cancelled: ``owner``'s, or every
    owner's when None (a scan of the recurring workflows' schedules, not of the jobs)."""
    if owner is not None:
        raw = store.get(layout.workflow_schedule_key(owner, workflow_id))
        found = [] if raw is None else [fold.loads(raw)]
    else:
        found = [
            fold.loads(value)
            for _, value in store.scan(
                layout.WORKFLOW_SCHEDULE, layout.upper_bound(layout.WORKFLOW_SCHEDULE)
            )
        ]
        found = [held for held in found if held["workflow_id"] == workflow_id]  # fmt: skip
    return [held for held in found if held.get("cancelled_at_ms") is None]
