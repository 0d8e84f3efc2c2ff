"""A job's event timeline: every JobLifecycle event of it, bounded, as the job page lists it.

One JSON list per job beside its document (namespace ``e``, :func:`keys.timeline_key`),
oldest first, of entries made by :func:`entry_of`: the kind, instant, attempt, execution,
worker, the scheduled instant and the lateness (FIRED: the timers' own figure; STARTED:
its instant minus the scheduled fire instant its execution id carries; the event that ends
a run whose worker tells when its handler began: that launch, ``launched_at_ms``, minus
the scheduled instant, the true start lateness, which a STARTED committed with its claim
before the launch cannot tell), the error, the detail and who asked.

Heartbeats would flood it (one every 10 s of a run), so the HEARTBEATs of one execution are
one entry: ``at_ms`` the first, ``last_at_ms`` the latest and ``count`` how many. A
heartbeat counts when it is later than the latest held (or earlier than the first): the
heartbeats of one run come from one worker in order, on one partition, so one folded twice
(a replay) is not counted twice.

The list holds the latest :data:`EVENTS_KEPT` entries by a total order on their fields, so
events folded in any order or twice leave the same list (as the commands of
:func:`fold.apply_command`), heartbeat counts aside when a replay meets them out of order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import ErrorInfo, JobLifecycle
from jobstream._pipeline.scheduling.ids import scheduled_ms_of

EVENTS_KEPT = 200
"""A job's latest timeline entries kept (a recurring job keeps its latest runs' events)."""
OUTCOMES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "LOST", "CANCELLED"})
"""The kinds that end an execution (a CANCELLED that names none ends the job only)."""
_RANK = {kind.value: rank for rank, kind in enumerate([
    LifecycleKind.SCHEDULED, LifecycleKind.BLOCKED, LifecycleKind.WAITING, LifecycleKind.PAUSED,
    LifecycleKind.RESUMED, LifecycleKind.FIRED, LifecycleKind.STARTED, LifecycleKind.HEARTBEAT,
    LifecycleKind.DUPLICATE, LifecycleKind.SUCCEEDED, LifecycleKind.FAILED,
    LifecycleKind.TIMED_OUT, LifecycleKind.LOST, LifecycleKind.CANCELLED,
    LifecycleKind.RETRY_SCHEDULED, LifecycleKind.DEAD_LETTERED, LifecycleKind.EXPIRED,
])}  # fmt: skip
"""Events of one millisecond in the order they happen in a job's life."""
_LATE = frozenset({LifecycleKind.FIRED, LifecycleKind.STARTED})


def entry_of(event: JobLifecycle) -> dict[str, Any] | None:
    """The timeline entry of a JobLifecycle ``event``; None for a kind it does not show
    (UNKNOWN)."""
    kind = str(event.kind)
    if kind not in _RANK:
        return None
    at = event.at_ms
    execution_id = event.execution_id or None
    scheduled = event.scheduled_at_ms
    lateness = event.lateness_ms
    launched = event.launched_at_ms if kind in OUTCOMES else None
    if kind in _LATE or launched is not None:
        scheduled = scheduled if scheduled is not None else scheduled_ms_of(execution_id)
        if lateness is None and scheduled is not None:
            lateness = (at if launched is None else launched) - scheduled
    entry = {
        "kind": kind, "at_ms": at, "attempt": event.attempt or None,
        "execution_id": execution_id, "worker_id": event.worker_id or None,
        "scheduled_at_ms": scheduled, "lateness_ms": lateness,
        "error": _error_text(event.error), "detail": event.detail or None,
        "by": event.requested_by or None,
        "count": 1 if kind == LifecycleKind.HEARTBEAT else None,
        "last_at_ms": at if kind == LifecycleKind.HEARTBEAT else None,
    }  # fmt: skip
    if launched is not None:  # only then: an entry held from before it reads the same
        entry["launched_at_ms"] = launched
    return entry


def _error_text(error: ErrorInfo | None) -> str | None:
    if error is None:
        return None
    kind, message = error.error_type or "Error", error.message or ""
    return f"{kind}: {message}" if message else kind


def _order(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return (entry["at_ms"], _RANK[entry["kind"]], entry["execution_id"] or "",
            entry["attempt"] or 0, entry["worker_id"] or "", entry["scheduled_at_ms"] or 0,
            entry["lateness_ms"] or 0, entry["error"] or "", entry["detail"] or "",
            entry["by"] or "")  # fmt: skip


def apply_event(held: list[dict[str, Any]] | None,
                event: JobLifecycle) -> list[dict[str, Any]] | None:  # fmt: skip
    """A job's timeline after ``event``, oldest first; None when it changes nothing (a kind
    not shown, an entry held already, or one older than the :data:`EVENTS_KEPT` held)."""
    entry = entry_of(event)
    if entry is None:
        return None
    entries = list(held or [])
    if entry["kind"] == LifecycleKind.HEARTBEAT and entry["execution_id"]:
        for i, old in enumerate(entries):
            if old["kind"] == entry["kind"] and old["execution_id"] == entry["execution_id"]:
                merged = _beat(old, entry["at_ms"], entry["worker_id"])
                if merged is None:
                    return None
                entries[i] = merged
                return sorted(entries, key=_order)
    if entry in entries:
        return None
    merged_list = sorted([*entries, entry], key=_order)[-EVENTS_KEPT:]
    return None if merged_list == entries else merged_list


def _beat(entry: Mapping[str, Any], at: int, worker_id: str | None) -> dict[str, Any] | None:
    """A run's heartbeat entry after one more heartbeat at ``at``; None when it is one the
    entry counts already (at or between its first and latest)."""
    first, last = int(entry["at_ms"]), int(entry["last_at_ms"] or entry["at_ms"])
    if first <= at <= last:
        return None
    return {
        **entry,
        "at_ms": min(first, at),
        "last_at_ms": max(last, at),
        "count": int(entry["count"] or 1) + 1,
        "worker_id": entry["worker_id"] or worker_id,
    }


def last_runs(entries: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The latest ``count`` outcomes of executions in a timeline, newest first: when each
    ended, how, on which attempt and worker."""
    ended = [entry for entry in entries
             if entry["kind"] in OUTCOMES and entry["execution_id"]]  # fmt: skip
    return [{"execution_id": entry["execution_id"], "attempt": entry["attempt"],
             "outcome": entry["kind"], "at_ms": entry["at_ms"], "worker_id": entry["worker_id"],
             "error": entry["error"]} for entry in reversed(ended[-count:])]  # fmt: skip
