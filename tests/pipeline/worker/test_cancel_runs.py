"""Cancels reaching a worker: a run under way is stopped (async: CancelledError; sync:
ctx.cancelled) and a buffered record of a cancelled job never starts; each ends CANCELLED
with who asked and why. On the driver (no broker), but for the cancels read back from
jobs.control at a worker's start, against the real broker."""

from __future__ import annotations

import threading

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import (
    WHO,
    WHY,
    DriveWorker,
    EventLog,
    HangingAsync,
    StartWorker,
    assert_cancelled,
    cancel_request,
)
from tests.support.pipeline import SERIALIZE


def cancel(topics: Topics, execution: Event, *, up_to_epoch: int | None = None) -> None:
    """Write the CancelRequested the API would write."""
    data = execution.data
    request = CancelRequest(job_id=data["job_id"], requested_at_ms=now_ms(),
                            up_to_epoch=now_ms() if up_to_epoch is None else up_to_epoch,
                            requested_by=WHO, reason=WHY)  # fmt: skip
    producer = clients.producer(topics.settings)
    producer.produce(topics.control, SERIALIZE(request.to_event()), request.key)
    assert producer.flush(30) == 0


def test_a_running_async_handler_is_cancelled(drive: DriveWorker) -> None:
    hanging = HangingAsync()
    began, stopped = hanging.began, hanging.cancelled
    driver = drive(hanging.app)
    job = execution_requested(job_type="image.render")
    (execution_id,) = driver.fire(job)
    driver.step()
    driver.run_until(began.is_set, what="the coroutine to begin")
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.run_until(lambda: driver.events(execution_id, "CANCELLED"), what="CANCELLED")
    assert_cancelled(driver.events(execution_id, "CANCELLED")[0], "driver")
    assert stopped.is_set()
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"]


def test_a_sync_handler_polling_ctx_cancelled_stops(drive: DriveWorker) -> None:
    app = WorkerApp()
    began, saw = threading.Event(), threading.Event()

    @app.handler("data.process")
    def poll(ctx: JobContext) -> str:
        began.set()
        while not ctx.wait_cancelled(0.05):
            pass
        saw.set()
        return "partial"  # dropped: the run ends CANCELLED

    driver = drive(app)
    job = execution_requested()
    (execution_id,) = driver.fire(job)
    driver.step()
    driver.run_until(began.is_set, what="the handler to begin")
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.run_until(lambda: driver.events(execution_id, "CANCELLED"), what="CANCELLED")
    assert saw.is_set()
    assert_cancelled(driver.events(execution_id, "CANCELLED")[0], "driver")
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"]
    assert driver.committed() == 1, "the offset committed with the outcome"
    assert driver.loop.stats.cancelled == 1


def test_a_buffered_record_of_a_cancelled_job_never_starts(
    drive: DriveWorker, gate: threading.Event, gated_app: WorkerApp
) -> None:
    driver = drive(gated_app, concurrency=1)
    first, second = execution_requested(), execution_requested()
    first_id, second_id = driver.fire(first, second, partition=0)
    driver.step()
    assert driver.loop.stats.buffered.get("normal") == 1, "the second waits in the buffer"
    driver.cancel(cancel_request(second, at_ms=driver.clock.now_ms))
    driver.step()
    gate.set()
    driver.run_until(lambda: driver.events(first_id, "SUCCEEDED")
                     and driver.events(second_id, "CANCELLED"), what="both ends")  # fmt: skip
    assert_cancelled(driver.events(second_id, "CANCELLED")[0], "driver")
    assert driver.kinds(second_id) == ["CANCELLED"], "never STARTED"


def test_a_cancel_written_before_the_worker_starts_is_read_back(
    topics: Topics, start_worker: StartWorker, events: EventLog, quick_app: WorkerApp
) -> None:

    cancelled, later = execution_requested(), execution_requested()
    cancel(topics, cancelled)
    # A firing after the cancel's instant is not covered: a redrive of the job, say.
    refired = execution_requested(job_id=later.data["job_id"])
    cancel(topics, later, up_to_epoch=refired.data["epoch"] - 1)
    cancelled_id, refired_id = submit(topics, cancelled, refired)
    start_worker(quick_app)
    assert_cancelled(events.wait(cancelled_id, "CANCELLED")[0])
    events.wait(refired_id, "SUCCEEDED")
    assert events.kinds(cancelled_id) == ["CANCELLED"]
