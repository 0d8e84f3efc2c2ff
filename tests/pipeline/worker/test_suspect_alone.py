"""A suspect (a retry whose last attempt's process died) runs alone, against the real
broker, even beside records fired ahead of their instant: the worker claims none of them
while the suspect runs, so none is launched beside it (pipeline/worker/quarantine.py)."""

from __future__ import annotations

import threading
import time

from pipeline.clock import now_ms
from pipeline.model.lifecycle import LEASE_EXPIRED
from pipeline.model.records import ErrorInfo, evolve
from pipeline.serde import Event
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.waiting import wait_for


def suspect(fire_ms: int) -> Event:
    """A second attempt whose first one's lease expired: its process died under it."""
    event = execution_requested(attempt=2, params={"seconds": 1.5}, fire_ms=fire_ms)
    lost = ErrorInfo(attempt=1, error_type=LEASE_EXPIRED, message="no heartbeat", at_ms=fire_ms)
    return Event(event.name, evolve(event.data, errors=[lost]))


def test_records_fired_ahead_wait_until_the_suspect_has_run_alone(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    spans: dict[str, list[int]] = {}
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            spans[ctx.execution_id] = [now_ms()]
        time.sleep(float(ctx.params.get("seconds", 0)))
        with lock:
            spans[ctx.execution_id].append(now_ms())

    worker = start_worker(app, concurrency=4)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    now = now_ms()
    [alone] = submit(topics, suspect(now))
    events.wait(alone, "STARTED", timeout_s=30)
    others = submit(topics, *(execution_requested(fire_ms=now_ms() + 600) for _ in range(5)))
    for execution_id in [alone, *others]:
        events.wait(execution_id, "SUCCEEDED", timeout_s=30)
    ended = spans[alone][1]
    beside = [e for e in others if spans[e][0] < ended]
    assert not beside, f"{len(beside)} of 5 ran beside the suspect"
