"""Cancels on jobs.control reaching a worker loop, against the real broker: a run under
way is stopped (async: CancelledError; sync: ctx.cancelled) and a buffered record of a
cancelled job never starts; each ends CANCELLED with who asked and why."""

from __future__ import annotations

import asyncio
import threading
import time

from pipeline.clock import now_ms
from pipeline.kafka import clients
from pipeline.model.cancel import CancelRequest
from pipeline.serde import Event
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker, committed_offsets
from tests.support.pipeline import SERIALIZE
from tests.support.waiting import wait_for

WHO, WHY = "cli:ann@box", "wrong month"


def cancel(topics: Topics, execution: Event, *, up_to_epoch: int | None = None) -> float:
    """Write the CancelRequested the timers would write; the monotonic instant it was sent."""
    data = execution.data
    request = CancelRequest(job_id=data["job_id"], requested_at_ms=now_ms(),
                            up_to_epoch=now_ms() if up_to_epoch is None else up_to_epoch,
                            requested_by=WHO, reason=WHY)  # fmt: skip
    producer = clients.producer(topics.settings)
    producer.produce(topics.control, SERIALIZE(request.to_event()), request.key)
    assert producer.flush(30) == 0
    return time.monotonic()


def assert_cancelled(record: dict[str, object], worker_id: str = "test-worker-0") -> None:
    assert record["requested_by"] == WHO and record["detail"] == WHY
    assert record["worker_id"] == worker_id and record["execution"] is not None


def test_a_running_async_handler_is_cancelled(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    stopped = threading.Event()

    @app.handler("image.render")
    async def hang(ctx: JobContext) -> str:
        try:
            await asyncio.sleep(120)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    job = execution_requested(job_type="image.render")
    (execution_id,) = submit(topics, job)
    start_worker(app)
    events.wait(execution_id, "STARTED")
    sent = cancel(topics, job)
    ended = events.wait(execution_id, "CANCELLED", timeout_s=10)[0]
    took = time.monotonic() - sent
    assert took < 2, f"CANCELLED on jobs.events {took:.2f} s after the cancel"
    assert_cancelled(ended)
    assert stopped.is_set()
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED", "CANCELLED"]


def test_a_sync_handler_polling_ctx_cancelled_stops(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    saw = threading.Event()

    @app.handler("data.process")
    def poll(ctx: JobContext) -> str:
        while not ctx.wait_cancelled(0.05):
            pass
        saw.set()
        return "partial"  # dropped: the run ends CANCELLED

    job = execution_requested()
    (execution_id,) = submit(topics, job)
    worker = start_worker(app)
    events.wait(execution_id, "STARTED")
    sent = cancel(topics, job)
    ended = events.wait(execution_id, "CANCELLED", timeout_s=10)[0]
    assert time.monotonic() - sent < 2
    assert saw.is_set()
    assert_cancelled(ended)
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED", "CANCELLED"]
    wait_for(lambda: committed_offsets(topics.settings, "data.process") == 1, timeout_s=30,
             what="the offset committed with the outcome")  # fmt: skip
    assert worker.runtime.stats.cancelled == 1


def test_a_sync_handler_ignoring_the_cancel_is_reported_after_the_grace(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def stubborn(ctx: JobContext) -> str:
        gate.wait(120)
        return "late"

    job = execution_requested()
    (execution_id,) = submit(topics, job)
    worker = start_worker(app, concurrency=1, cancel_grace_s=0.5)
    events.wait(execution_id, "STARTED")
    sent = cancel(topics, job)
    assert_cancelled(events.wait(execution_id, "CANCELLED", timeout_s=10)[0])
    assert time.monotonic() - sent >= 0.5
    assert worker.runtime.stats.running == 1, "the thread still holds its slot"
    gate.set()
    wait_for(lambda: worker.runtime.stats.running == 0, timeout_s=10, what="the slot freed")
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED", "CANCELLED"], "the late result is dropped"


def test_a_buffered_record_of_a_cancelled_job_never_starts(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def busy(ctx: JobContext) -> str:
        gate.wait(120)
        return "done"

    first, second = execution_requested(), execution_requested()
    (first_id,) = submit(topics, first)
    worker = start_worker(app, concurrency=1)
    events.wait(first_id, "STARTED")
    (second_id,) = submit(topics, second)
    wait_for(lambda: worker.runtime.stats.buffered.get("normal") == 1, timeout_s=30,
             what="the second job to wait in the buffer")  # fmt: skip
    cancel(topics, second)
    wait_for(lambda: len(worker.runtime.engine.runs.cancels) == 1, timeout_s=10,
             what="the cancel read")  # fmt: skip
    gate.set()
    events.wait(first_id, "SUCCEEDED")
    assert_cancelled(events.wait(second_id, "CANCELLED")[0])
    events.catch_up()
    assert events.kinds(second_id) == ["CANCELLED"], "never STARTED"


def test_a_cancel_written_before_the_worker_starts_is_read_back(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def quick(ctx: JobContext) -> str:
        return "ran"

    cancelled, later = execution_requested(), execution_requested()
    cancel(topics, cancelled)
    # A firing after the cancel's instant is not covered: a redrive of the job, say.
    refired = execution_requested(job_id=later.data["job_id"])
    cancel(topics, later, up_to_epoch=refired.data["epoch"] - 1)
    cancelled_id, refired_id = submit(topics, cancelled, refired)
    start_worker(app)
    assert_cancelled(events.wait(cancelled_id, "CANCELLED")[0])
    events.wait(refired_id, "SUCCEEDED")
    assert events.kinds(cancelled_id) == ["CANCELLED"]
