"""Whether a job waits for a worker pool that no live worker serves.

A job submitted with a pool (``--pool gpu``) runs only on workers started with the same
pool (docs/fairness.md). When none is alive, the job sits QUEUED on its pool's topics
like any job a worker has not taken yet; the views know the workers (jobs.workers) and
the job's pool (its submission), so they can tell the two apart.

The rule is here once, and so is the reading of the workers' view it needs: the API's
job, its listings and its live stream call :func:`with_waiting`, the API's metrics
:func:`waiting_counts` (docs/api.md, docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobstream._connectors.views.query import pool_counts, workers
from jobstream._connectors.views.store import ViewStore

WAITING_STATES = frozenset({"QUEUED"})
"""Fired and not started: the states in which a job waits for a worker."""


class Served:
    """The (job type, pool) pairs that some live (not stale) worker of ``workers`` serves,
    read once for every job a listing, a stream batch or a scrape asks about."""

    def __init__(self, workers: Iterable[Mapping[str, Any]]) -> None:
        self.pairs = frozenset(
            (job_type, worker["pool"]) for worker in workers
            if not worker.get("stale") and worker.get("pool") is not None
            for job_type in worker.get("job_types") or ()
        )  # fmt: skip

    def waiting(self, doc: Mapping[str, Any]) -> bool:
        """A QUEUED job of a pool that none of these workers serves."""
        return may_wait(doc) and (doc["job_type"], doc["pool"]) not in self.pairs


def may_wait(doc: Mapping[str, Any]) -> bool:
    """A job that waits for a pool unless a live worker serves it."""
    return doc.get("pool") is not None and doc.get("state") in WAITING_STATES


def served(store: ViewStore, *, stale_after_ms: int) -> Served:
    """What the workers the views hold serve now (a heartbeat within ``stale_after_ms``,
    not STOPPED)."""
    return Served(workers(store, stale_after_ms=stale_after_ms))


def with_waiting(docs: Sequence[Mapping[str, Any]], store: ViewStore, *,
                 stale_after_ms: int) -> list[dict[str, Any]]:  # fmt: skip
    """Copies of ``docs`` with their ``waiting_for_pool`` flag; the workers' view is read
    once, and only when one of them is a QUEUED job of a pool."""
    if not any(may_wait(doc) for doc in docs):
        return [{**doc, "waiting_for_pool": False} for doc in docs]
    now = served(store, stale_after_ms=stale_after_ms)
    return [{**doc, "waiting_for_pool": now.waiting(doc)} for doc in docs]


def waiting_counts(store: ViewStore, *, stale_after_ms: int) -> dict[tuple[str, str], int]:
    """How many jobs wait for a pool no live worker serves, by (pool, job type): the pool
    counters the views keep beside the documents, never a scan of the jobs."""
    counted = pool_counts(store)
    now = served(store, stale_after_ms=stale_after_ms) if counted else Served(())
    found: dict[tuple[str, str], int] = {}
    for (pool, job_type, state), count in counted.items():
        if now.waiting({"pool": pool, "job_type": job_type, "state": state}):
            found[(pool, job_type)] = found.get((pool, job_type), 0) + count
    return found
