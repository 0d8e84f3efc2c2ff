"""Whether a job waits for a worker pool that no live worker serves.

A job submitted with a pool (``--pool gpu``) runs only on workers started with the same
pool (docs/fairness.md). When none is alive, the job sits QUEUED on its pool's topics
like any job a worker has not taken yet; the views know the workers (jobs.workers) and
the job's pool (its submission), so they can tell the two apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

WAITING_STATES = frozenset({"QUEUED"})
"""Fired and not started: the states in which a job waits for a worker."""


def serves(worker: Mapping[str, Any], job_type: str, pool: str) -> bool:
    """Whether a live (not stale) worker runs ``job_type`` jobs of ``pool``."""
    return (not worker.get("stale") and worker.get("pool") == pool
            and job_type in (worker.get("job_types") or ()))  # fmt: skip


def waiting_for_pool(doc: Mapping[str, Any], workers: Iterable[Mapping[str, Any]]) -> bool:
    """A QUEUED job of a pool that no live worker (of ``workers``) serves."""
    pool = doc.get("pool")
    if pool is None or doc.get("state") not in WAITING_STATES:
        return False
    return not any(serves(worker, doc["job_type"], pool) for worker in workers)
