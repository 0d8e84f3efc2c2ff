"""A busy worker's outcomes and its claims ahead, against the real broker: the outcomes
wait for the next claim's transaction when it comes soon, rather than make one of their
own between two claims (pipeline/runtime/schedule.py; docs/benchmarks.md)."""

from __future__ import annotations

import time

from pipeline.clock import now_ms
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from pipeline.worker.lane import Lane
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.waiting import wait_for


def _noop_lane(start_worker: StartWorker, **options: float) -> Lane:
    """The lane of a worker of no-op runs, its partitions assigned."""
    app = WorkerApp()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        return None

    lane = start_worker(app, **options).runtime.lanes[0]
    wait_for(lambda: lane.tracker.assigned(), timeout_s=60, what="the worker's partitions")
    return lane


def test_outcomes_ride_the_claims_of_a_worker_firing_ahead(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    lane = _noop_lane(start_worker, concurrency=8)
    # One due every 50 ms for 2 s, sent 3 s ahead: claimed ahead every 200 ms (about 11
    # claims), each run ending long before the next claim.
    first = now_ms() + 3000
    ids = submit(topics, *(execution_requested(fire_ms=first + 50 * i) for i in range(40)))
    wait_for(lambda: len(lane.early) == 40, timeout_s=10, what="the 40 records held ahead")
    before = lane.tx.transactions
    for execution_id in ids:
        events.wait(execution_id, "SUCCEEDED", timeout_s=30)
    wait_for(lambda: not lane.tx.pending, timeout_s=10, what="the last outcomes committed")
    transactions = lane.tx.transactions - before
    # Old rule: every claim followed by a transaction of the outcomes 100 ms later (26).
    assert transactions <= 16, f"{transactions} transactions for about 11 claims"


def test_a_far_claim_ahead_does_not_hold_the_outcomes_back_for_its_claim(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    """With ``--claim-ahead 5s`` a record held for its claim 4 s from now would let the
    outcomes in hand wait 4 s to ride it; they wait at most CLAIM_GRACE_MS for one."""
    lane = _noop_lane(start_worker, claim_ahead_s=5.0)
    submit(topics, execution_requested(fire_ms=now_ms() + 9000))
    wait_for(lambda: len(lane.early) == 1, timeout_s=5, what="the record held for its claim")
    sent = time.monotonic()
    (execution_id,) = submit(topics, execution_requested())
    events.wait(execution_id, "SUCCEEDED", timeout_s=30)
    took = time.monotonic() - sent
    assert len(lane.early) == 1, "read before the held record's claim"
    assert took < 2.5, f"the outcome waited {took:.1f} s for the claim ahead"
