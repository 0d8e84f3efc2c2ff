"""A QUEUED job of a pool waits for a pool when no live worker serves that pool and type."""

from __future__ import annotations

from typing import Any

from connectors.views.pools import waiting_for_pool


def worker(pool: str | None, *types: str, stale: bool = False) -> dict[str, Any]:
    return {"worker_id": "w", "job_types": list(types), "pool": pool, "stale": stale}


def job(state: str = "QUEUED", pool: str | None = "gpu") -> dict[str, Any]:
    return {"job_id": "J", "job_type": "image.render", "state": state, "pool": pool}


def test_a_queued_job_of_a_pool_no_live_worker_serves_is_waiting() -> None:
    assert waiting_for_pool(job(), [])
    assert waiting_for_pool(job(), [worker(None, "image.render")])  # serves no pool
    assert waiting_for_pool(job(), [worker("cpu", "image.render")])
    assert waiting_for_pool(job(), [worker("gpu", "data.process")])
    assert waiting_for_pool(job(), [worker("gpu", "image.render", stale=True)])


def test_a_live_worker_of_the_pool_and_type_serves_it() -> None:
    assert not waiting_for_pool(job(), [worker("cpu", "image.render"),
                                        worker("gpu", "data.process", "image.render")])


def test_only_queued_jobs_of_a_pool_wait_for_one() -> None:
    assert not waiting_for_pool(job(pool=None), [])
    for state in ("SCHEDULED", "RUNNING", "SUCCEEDED"):
        assert not waiting_for_pool(job(state=state), [])
