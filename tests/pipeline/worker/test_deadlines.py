"""A worker starts no execution past the job's deadline or its attempt's queue limit (the
status processor expires the job), and ends a run by the deadline: with no broker, on a
test clock, the handlers run on the real executor."""

from __future__ import annotations

import threading
from typing import Any

from jobstream._pipeline.model.records import evolve
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker


def _limited(execution: Event, *, fired_at_ms: int, **limits: Any) -> Event:
    run = execution.data
    return Event.of(evolve(run, fired_at_ms=fired_at_ms, spec=evolve(run.spec, **limits)))


def test_an_execution_past_its_queue_limit_or_deadline_is_not_run(drive: DriveWorker) -> None:
    began: list[str] = []
    app = WorkerApp()

    @app.handler("data.process")
    def work(ctx: JobContext) -> str:
        began.append(ctx.execution_id)
        return "done"

    driver = drive(app)
    now = driver.clock.now_ms
    queued_too_long = _limited(execution_requested(due_ms=now - 10_000),
                               fired_at_ms=now - 10_000, queue_limit_ms=10_000)  # fmt: skip
    past_deadline = _limited(execution_requested(due_ms=now - 1_000),
                             fired_at_ms=now - 1_000, deadline_ms=now)  # fmt: skip
    in_time = _limited(execution_requested(due_ms=now - 10_000), fired_at_ms=now - 10_000,
                       queue_limit_ms=10_001, deadline_ms=now + 1)  # fmt: skip
    expired, late, fresh = driver.fire(queued_too_long, past_deadline, in_time, partition=0)
    driver.step()
    driver.run_until(lambda: driver.events(fresh, "SUCCEEDED"), what="the run in time")
    assert began == [fresh]
    assert driver.kinds(expired) == driver.kinds(late) == [], "no STARTED, no outcome"
    assert driver.loop.stats.expired == 2
    assert driver.committed() == 3, "their offsets are done"


def test_a_run_ends_by_the_deadline_before_its_timeout(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process", timeout_s=60)
    def work(ctx: JobContext) -> str:
        gate.wait(60)
        return "done"

    driver = drive(app)
    now = driver.clock.now_ms
    run = _limited(execution_requested(due_ms=now), fired_at_ms=now, deadline_ms=now + 700)
    [execution_id] = driver.fire(run)
    driver.step()
    driver.run_until(lambda: driver.kinds(execution_id) == ["STARTED"], what="STARTED")
    driver.advance(699)
    assert driver.kinds(execution_id) == ["STARTED"]
    driver.advance(1)
    [timed_out] = driver.events(execution_id, "TIMED_OUT")
    assert "0.7 s" in timed_out["error"]["message"]
