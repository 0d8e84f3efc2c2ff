"""A busy worker's outcomes and its claims ahead, on the driver (no broker): the outcomes
wait for the next claim's transaction when it comes soon, rather than make one of their
own between two claims (pipeline/runtime/schedule.py; docs/benchmarks.md, "Transactions a
second")."""

from __future__ import annotations

from jobstream._pipeline.runtime.schedule import DEFAULT_INTERVAL_S
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker


def _noop_worker(drive: DriveWorker, **options: float) -> WorkerDriver:
    """A worker of no-op runs, committing on the default interval."""
    app = WorkerApp()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        return None

    return drive(app, commit_interval_s=DEFAULT_INTERVAL_S, **options)


def _advance(driver: WorkerDriver, ms: int) -> None:
    """Move the clock 10 ms at a time, every run begun ending before the next move."""

    def begun_ended() -> bool:
        now = driver.clock.now_ms
        return all(job.execution.scheduled_at_ms > now
                   for job in driver.loop.inflight.slots.values())  # fmt: skip

    for _ in range(ms // 10):
        driver.advance(10)
        driver.run_until(begun_ended, what="the runs' ends")


def test_outcomes_ride_the_claims_of_a_worker_firing_ahead(drive: DriveWorker) -> None:
    driver = _noop_worker(drive, concurrency=8, claim_ahead_s=0.2)
    lane = driver.loop.lanes[0]
    # One due every 50 ms for 2 s, sent 3 s ahead: claimed ahead every 200 ms (about 11
    # claims), each run ending long before the next claim.
    first = driver.clock.now_ms + 3000
    ids = driver.fire(*(execution_requested(due_ms=first + 50 * i) for i in range(40)))
    driver.step(times=40)
    assert len(lane.early) == 40, "the 40 records held ahead"
    before = lane.tx.transactions
    _advance(driver, 5300)
    assert all(driver.kinds(e) == ["STARTED", "SUCCEEDED"] for e in ids)
    assert not lane.tx.pending
    transactions = lane.tx.transactions - before
    # Old rule: every claim followed by a transaction of the outcomes 100 ms later (26).
    assert transactions <= 16, f"{transactions} transactions for about 11 claims"


def test_a_far_claim_ahead_does_not_hold_the_outcomes_back_for_its_claim(
    drive: DriveWorker,
) -> None:
    """With ``--claim-ahead 5s`` a record held for its claim 4 s from now would let the
    outcomes in hand wait 4 s to ride it; they wait at most CLAIM_GRACE_MS for one."""
    driver = _noop_worker(drive, claim_ahead_s=5.0)
    lane = driver.loop.lanes[0]
    driver.fire(execution_requested(due_ms=driver.clock.now_ms + 9000))
    driver.step()
    assert len(lane.early) == 1, "the record held for its claim"
    (execution_id,) = driver.fire(execution_requested(due_ms=driver.clock.now_ms))
    driver.step()
    _advance(driver, 300)
    assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"], "committed within 300 ms"
    assert len(lane.early) == 1, "before the held record's claim"
