"""A QUEUED job of a pool waits for a pool when no live worker serves that pool and type;
the flag the API shows and the counts the metric exports, on real RocksDB files."""

from __future__ import annotations

from typing import Any

from jobstream._connectors.views import ViewStore
from jobstream._connectors.views.pools import Served, waiting_counts, with_waiting
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.records import WorkerHeartbeat, WorkerState
from tests.connectors.views.records import T0, fold, status, submitted

STALE_AFTER_MS = 10_000


def worker(pool: str | None, *types: str, stale: bool = False) -> dict[str, Any]:
    return {"worker_id": "w", "job_types": list(types), "pool": pool, "stale": stale}


def job(state: str = "QUEUED", pool: str | None = "gpu") -> dict[str, Any]:
    return {"job_id": "J", "job_type": "image.render", "state": state, "pool": pool}


def waiting_for_pool(doc: dict[str, Any], workers: list[dict[str, Any]]) -> bool:
    """The flag of one job, given the workers the views hold."""
    return Served(workers).waiting(doc)


def test_a_queued_job_of_a_pool_no_live_worker_serves_is_waiting() -> None:
    assert waiting_for_pool(job(), [])
    assert waiting_for_pool(job(), [worker(None, "image.render")])  # serves no pool
    assert waiting_for_pool(job(), [worker("cpu", "image.render")])
    assert waiting_for_pool(job(), [worker("gpu", "data.process")])
    assert waiting_for_pool(job(), [worker("gpu", "image.render", stale=True)])


def test_a_live_worker_of_the_pool_and_type_serves_it() -> None:
    assert not waiting_for_pool(
        job(), [worker("cpu", "image.render"), worker("gpu", "data.process", "image.render")]
    )


def test_only_queued_jobs_of_a_pool_wait_for_one() -> None:
    assert not waiting_for_pool(job(pool=None), [])
    for state in ("SCHEDULED", "RUNNING", "SUCCEEDED"):
        assert not waiting_for_pool(job(state=state), [])


def beat(store: ViewStore, worker_id: str, pool: str | None, *types: str, at_ms: int,
         state: str = "RUNNING") -> None:  # fmt: skip
    batch = store.batch()
    batch.worker(worker_id, WorkerHeartbeat(
        worker_id=worker_id, host="h", pid=1, job_types=list(types), capacity=1, pool=pool,
        state=WorkerState(state), started_at_ms=at_ms, at_ms=at_ms))  # fmt: skip
    batch.commit()


def test_listed_documents_carry_the_flag_and_the_workers_decide_it(store: ViewStore) -> None:
    gpu, plain = submitted(at_ms=T0, pool="gpu"), submitted(at_ms=T0 + 1)
    fold(store, gpu, plain, status(gpu, "QUEUED", at_ms=T0 + 5),
         status(plain, "QUEUED", at_ms=T0 + 5))  # fmt: skip
    docs = [store.doc(gpu["job_id"]), store.doc(plain["job_id"])]

    def flags() -> list[bool]:
        shown = with_waiting(docs, store, stale_after_ms=STALE_AFTER_MS)  # type: ignore[arg-type]
        return [doc["waiting_for_pool"] for doc in shown]

    assert flags() == [True, False]
    assert "waiting_for_pool" not in docs[0]  # copies: the documents read stay as they were
    beat(store, "gpu-1", "gpu", "data.process", at_ms=now_ms())
    assert flags() == [False, False]
    beat(store, "gpu-1", "gpu", "data.process", at_ms=now_ms(), state="STOPPED")
    assert flags() == [True, False]
    beat(store, "gpu-1", "gpu", "data.process", at_ms=now_ms() - STALE_AFTER_MS - 1000)
    assert flags() == [True, False]


def test_the_counts_are_the_waiting_jobs_by_pool_and_type(store: ViewStore) -> None:
    renders = [submitted("acme", "image.render", at_ms=T0 + i, pool="gpu") for i in range(3)]
    other = submitted("bolt", "data.process", at_ms=T0, pool="gpu")
    west = submitted("acme", "data.process", at_ms=T0, pool="eu-west")
    plain = submitted("acme", "data.process", at_ms=T0)
    fold(store, *renders, other, west, plain,
         *(status(job, "QUEUED", at_ms=T0 + 10) for job in (*renders, other, west, plain)),
         status(renders[2], "RUNNING", at_ms=T0 + 20))  # fmt: skip

    def counts() -> dict[tuple[str, str], int]:
        return waiting_counts(store, stale_after_ms=STALE_AFTER_MS)

    assert counts() == {("gpu", "image.render"): 2, ("gpu", "data.process"): 1,
                        ("eu-west", "data.process"): 1}  # fmt: skip
    beat(store, "gpu-1", "gpu", "image.render", at_ms=now_ms())
    assert counts() == {("gpu", "data.process"): 1, ("eu-west", "data.process"): 1}
    # they move with the jobs' states, and a purged job leaves them
    fold(store, status(other, "SUCCEEDED", at_ms=T0 + 30),
         status(west, "CANCELLED", at_ms=T0 + 30))  # fmt: skip
    assert counts() == {}
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 2
    batch.commit()
    assert counts() == {}
    beat(store, "gpu-1", "gpu", "image.render", at_ms=now_ms(), state="STOPPED")
    assert counts() == {("gpu", "image.render"): 2}
