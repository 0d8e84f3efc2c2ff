"""Records fired ahead of their due instant (JOBSTREAM_FIRE_LEAD), against the real
broker: a worker holds each until its instant, never starting it before; a cancel that
arrives meanwhile ends it CANCELLED, never started."""

from __future__ import annotations

import threading

from pipeline.clock import now_ms
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.pipeline.worker.test_cancel_runs import assert_cancelled, cancel
from tests.support.waiting import wait_for


def test_records_fired_ahead_start_on_their_instant_not_before(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    started: dict[str, tuple[int, int]] = {}
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            started[ctx.execution_id] = (now_ms(), ctx.scheduled_at_ms)

    worker = start_worker(app)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    base = now_ms() + 6000
    jobs = [execution_requested(fire_ms=base + i * 400) for i in range(4)]
    ids = submit(topics, *jobs)
    wait_for(lambda: len(worker.runtime.lanes[0].early) == 4, timeout_s=5,
             what="the four records held before their instant")  # fmt: skip
    for execution_id in ids:
        [started_event] = events.wait(execution_id, "STARTED", timeout_s=30)
        events.wait(execution_id, "SUCCEEDED", timeout_s=30)
        at, due = started[execution_id]
        assert at >= due, f"started {due - at} ms before its instant"
        assert started_event["at_ms"] >= due
    order = sorted(ids, key=lambda execution_id: started[execution_id][0])
    assert order == ids, "they start in the order of their instants"


def test_a_cancel_before_the_instant_ends_the_record_never_started(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    ran = threading.Event()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        ran.set()

    worker = start_worker(app)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    job = execution_requested(fire_ms=now_ms() + 8000)
    (execution_id,) = submit(topics, job)
    wait_for(lambda: len(worker.runtime.lanes[0].early) == 1, timeout_s=6,
             what="the record held before its instant")  # fmt: skip
    cancel(topics, job)
    [ended] = events.wait(execution_id, "CANCELLED", timeout_s=30)
    assert_cancelled(ended)
    events.catch_up()
    assert events.kinds(execution_id) == ["CANCELLED"] and not ran.is_set()
