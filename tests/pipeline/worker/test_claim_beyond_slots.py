"""Claims beyond the free slots, against the real broker: with every slot taken, a type
whose runs are shorter than a claim's round trip has as many more due records claimed as
its slots run in one round trip, each launched as a run ends, so the worker does not wait
a claim's round trip for every ``concurrency`` runs (pipeline/worker/engine.py,
``_claim_beyond_slots``); a type whose runs are longer never has."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pipeline.clock import now_ms
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.waiting import wait_for


def _run_all(topics: Topics, start_worker: StartWorker, events: EventLog,
             handler: Callable[[JobContext], None], count: int) -> tuple[int, int]:  # fmt: skip
    """Run ``count`` records due at once with ``handler`` on 4 slots; (the worker's
    transactions for them, the most runs claimed and waiting for a slot at once)."""
    app = WorkerApp()
    app.handler("data.process")(handler)
    worker = start_worker(app, concurrency=4)
    lane = worker.runtime.lanes[0]
    wait_for(lambda: lane.tracker.assigned(), timeout_s=60, what="the worker's partitions")
    [warm] = submit(topics, execution_requested(fire_ms=now_ms()))
    events.wait(warm, "SUCCEEDED", timeout_s=30)  # the type's runs measured once
    before = lane.tx.transactions
    most, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            most[0] = max(most[0], len(worker.runtime.inflight.ahead))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        ids = submit(topics, *(execution_requested(fire_ms=now_ms()) for _ in range(count)))
        for execution_id in ids:
            events.wait(execution_id, "SUCCEEDED", timeout_s=60)
            assert events.kinds(execution_id).count("STARTED") == 1
        wait_for(lambda: not lane.tx.pending, timeout_s=10, what="the last outcomes committed")
    finally:
        done.set()
        watcher.join(5)
    return lane.tx.transactions - before, most[0]


def test_short_runs_are_claimed_beyond_the_free_slots(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    transactions, most = _run_all(topics, start_worker, events, lambda ctx: None, 200)
    # As many as four slots run in a claim's round trip: tens here (116 in one run).
    assert most > 4, f"at most {most} runs claimed beyond the slots at once"
    # Claims for the free slots alone take 4 runs each: 50 transactions at least (52 in a
    # run). With claims beyond them, 9 alone and 40 beside the suite's other process.
    assert transactions < 50, f"{transactions} transactions for 200 runs of 4 slots"


def test_long_runs_are_claimed_for_free_slots_only(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    _, most = _run_all(topics, start_worker, events, lambda ctx: time.sleep(0.15), 12)
    assert most == 0, f"{most} runs of 150 ms claimed beyond the slots"
