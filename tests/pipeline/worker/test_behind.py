"""A worker behind its records fired ahead, against the real broker: once a run it
claimed ahead waits past its instant for a slot, it claims nothing more ahead, so what a
crash would take down with it stays near what it runs (docs/lifecycle.md, "Firing
ahead")."""

from __future__ import annotations

import threading
import time

from pipeline.clock import now_ms
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.waiting import wait_for


def test_a_worker_behind_claims_nothing_more_ahead(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def slow(ctx: JobContext) -> None:
        time.sleep(0.3)

    worker = start_worker(app, concurrency=2)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    # Four due every 100 ms for 2 s, sent 3 s ahead: 40 a second, for two slots that run 7.
    first = now_ms() + 3000
    ids = submit(topics, *(execution_requested(fire_ms=first + 100 * (i // 4))
                           for i in range(80)))  # fmt: skip
    most, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            most[0] = max(most[0], len(worker.runtime.inflight.ahead))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        for execution_id in ids:
            events.wait(execution_id, "SUCCEEDED", timeout_s=60)
    finally:
        done.set()
        watcher.join(5)
    # Claimed ahead: the first instant's four, and those of the instants claimed before a
    # run waited past its instant (due within 200 ms of the first: 12). All 80 otherwise.
    assert 4 <= most[0] <= 16, f"{most[0]} runs claimed ahead at once, of 80"
