"""Queries on the views, each a prefix scan of one index (never a scan of everything).

A listing picks the index that holds the most of its filters (:func:`layout.choose_index`)
and checks the others on the documents it reads. A page ends when it holds ``limit``
jobs or after ``max_scan`` index entries, whichever comes first, so a filter the index
does not hold costs a bounded amount of work per page: a page may then hold fewer jobs
than asked, and its cursor goes on from where the scan stopped. The cursor is the
position within the chosen index's prefix (URL-safe base64), so it cannot reach
outside the filters it was issued for.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobstream._connectors.views import fold, layout
from jobstream._connectors.views.store import ViewStore

MAX_SCAN = 5000


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None
    """None when the listing is complete."""


def _a_sort_part(position: bytes) -> bool:
    return len(position) == layout.SORT_PART_LENGTH


def list_jobs(store: ViewStore, filters: Mapping[str, str], *, limit: int = 50,
              cursor: str | None = None, max_scan: int = MAX_SCAN,
              since_ms: int | None = None, until_ms: int | None = None) -> Page:  # fmt: skip
    """Jobs matching every filter (``owner``, ``state``, ``job_type``, ``label`` as
    ``name=value``), newest first; created at or after ``since_ms`` and before ``until_ms``
    when given (bounds of the index's scan: every index sorts by creation)."""
    index = layout.choose_index(filters)
    prefix = index.prefix(filters)
    rest = {name: value for name, value in filters.items() if name not in index.fields}
    lower, upper = created_range(prefix, since_ms, until_ms)
    if cursor is not None:
        lower = max(lower, prefix + layout.decode_cursor(cursor, _a_sort_part) + b"\x00")
    items: list[dict[str, Any]] = []
    last: bytes | None = None
    for scanned, (key, _) in enumerate(store.scan(lower, upper)):
        if len(items) >= limit or scanned >= max_scan:
            return Page(items, layout.encode_cursor(last[len(prefix):]) if last else None)
        last = key
        doc = store.doc(layout.job_id_of(key))
        if doc is not None and _matches(doc, rest):
            items.append(doc)
    return Page(items, None)


def created_range(prefix: bytes, since_ms: int | None,
                  until_ms: int | None) -> tuple[bytes, bytes]:  # fmt: skip
    """The keys under an index's ``prefix`` of jobs created in [since_ms, until_ms)."""
    lower, upper = prefix, layout.upper_bound(prefix)
    if until_ms is not None:  # newest first: the latest instant bounds the scan below
        lower = prefix + layout.created_part(until_ms - 1)
    if since_ms is not None:
        upper = min(upper, prefix + layout.created_part(since_ms - 1))
    return lower, upper


def _matches(doc: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    for name, value in filters.items():
        if name == "label":
            if value not in layout.labels_of(doc.get("labels") or {}):
                return False
        elif doc.get(name) != value:
            return False
    return True


def executions(store: ViewStore, job_id: str) -> list[dict[str, Any]]:
    """Every execution of a job, by firing then attempt."""
    prefix = layout.execution_prefix(job_id)
    return [fold.loads(value) for _, value in store.scan(prefix, layout.upper_bound(prefix))]


def commands(store: ViewStore, job_id: str) -> list[dict[str, Any]]:
    """The commands people gave a job (the latest :data:`fold.COMMANDS_KEPT`), oldest
    first: kind, ``at_ms``, ``by`` and ``reason``."""
    raw = store.get(layout.commands_key(job_id))
    return [] if raw is None else fold.loads_list(raw)


def workflow_jobs(store: ViewStore, workflow_id: str) -> list[dict[str, Any]]:
    """The documents of every job of a workflow the views hold, by job id."""
    prefix = layout.workflow_prefix(workflow_id)
    found = (store.doc(key[len(prefix):].decode())
             for key, _ in store.scan(prefix, layout.upper_bound(prefix)))  # fmt: skip
    return [doc for doc in found if doc is not None]


def params(store: ViewStore, job_id: str) -> bytes | None:
    return store.get(layout.params_key(job_id))


def params_location(store: ViewStore, job_id: str) -> tuple[int, int] | None:
    """(partition, offset) on jobs.intake of the submission of parameters too large for
    the views; None when the views keep them or never read the submission."""
    raw = store.get(layout.params_at_key(job_id))
    return None if raw is None else layout.decode_location(raw)


def result_location(store: ViewStore, job_id: str,
                    execution_id: str | None = None) -> tuple[int, int] | None:  # fmt: skip
    """(partition, offset) on jobs.results of the job's latest result, or of one
    execution's; None when the views have read none."""
    key = (layout.result_at_key(job_id) if execution_id is None
           else layout.run_result_key(job_id, execution_id))  # fmt: skip
    raw = store.get(key)
    return None if raw is None else layout.decode_location(raw)


def logs_location(store: ViewStore, job_id: str, execution_id: str) -> tuple[int, int] | None:
    """(partition, offset) on jobs.logs of one execution's log lines; None when the views
    have read none."""
    raw = store.get(layout.run_logs_key(job_id, execution_id))
    return None if raw is None else layout.decode_location(raw)


def workers(store: ViewStore, *, stale_after_ms: int, now_ms: int | None = None,
            ) -> list[dict[str, Any]]:  # fmt: skip
    """Every worker's latest heartbeat, with its age and whether it is stale (no heartbeat
    within ``stale_after_ms``, or STOPPED)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    found = []
    for _, value in store.scan(layout.WORKER, layout.upper_bound(layout.WORKER)):
        worker = fold.loads(value)
        age = max(0, now - int(worker["at_ms"]))
        worker["age_ms"] = age
        worker["stale"] = age > stale_after_ms or worker.get("state") == "STOPPED"
        found.append(worker)
    return found


@dataclass(frozen=True)
class Counts:
    """How many jobs the views hold, by state and by type and state."""

    by_state: dict[str, int]
    by_type: dict[str, dict[str, int]]

    @property
    def total(self) -> int:
        return sum(self.by_state.values())


def counts(store: ViewStore, owner: str | None = None) -> Counts:
    """The jobs of ``owner`` (every owner's when None), counted: a scan of the counters
    (one per owner, type and state), never of the jobs."""
    prefix = layout.count_prefix(owner)
    by_state: dict[str, int] = {}
    by_type: dict[str, dict[str, int]] = {}
    for key, value in store.scan(prefix, layout.upper_bound(prefix)):
        _, job_type, state = layout.count_parts(key)
        count = layout.decode_offset(value)
        by_state[state] = by_state.get(state, 0) + count
        of_type = by_type.setdefault(job_type, {})
        of_type[state] = of_type.get(state, 0) + count
    return Counts(by_state, by_type)


def pool_counts(store: ViewStore) -> dict[tuple[str, str, str], int]:
    """The jobs of every pool, counted by (pool, job type, state): a scan of the pool
    counters, never of the jobs."""
    found: dict[tuple[str, str, str], int] = {}
    for key, value in store.scan(layout.POOL_COUNT, layout.upper_bound(layout.POOL_COUNT)):
        found[layout.pool_count_parts(key)] = layout.decode_offset(value)
    return found


def timeline(store: ViewStore, job_id: str) -> list[dict[str, Any]]:
    """A job's event timeline (connectors/views/timeline.py), oldest first."""
    raw = store.get(layout.timeline_key(job_id))
    return [] if raw is None else fold.loads_list(raw)
