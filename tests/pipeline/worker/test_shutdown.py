"""Worker health on jobs.workers, draining on stop, and giving unfinished jobs up, on the
driver (no broker)."""

from __future__ import annotations

import threading
from typing import Any

from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker
from tests.support.waiting import wait_for


def blocking_app(gate: threading.Event) -> WorkerApp:
    app = WorkerApp()

    @app.handler("data.process")
    def wait_for_gate(ctx: JobContext) -> str:
        if ctx.params.get("block", True):
            gate.wait(120)
        return "finished"

    return app


def _health(driver: WorkerDriver, state: str) -> list[Any]:
    return [record for record in driver.workers() if record["state"] == state]


def test_health_records_and_a_drain_that_waits_for_the_job_in_flight(
    drive: DriveWorker, gate: threading.Event
) -> None:
    driver = drive(blocking_app(gate), worker_id="w-health", concurrency=4,
                   worker_heartbeat_s=0.3)  # fmt: skip
    assert _health(driver, "STARTING"), "a worker announces itself before it joins its groups"
    (execution_id,) = driver.fire(execution_requested())
    driver.step()
    driver.advance(300)
    beat = _health(driver, "RUNNING")[-1]
    assert beat["running"] == [execution_id]
    assert (beat["worker_id"], beat["job_types"], beat["capacity"]) == (
        "w-health", ["data.process"], 4)  # fmt: skip

    stopping = threading.Thread(target=driver.shut_down)
    stopping.start()
    wait_for(lambda: _health(driver, "DRAINING"), timeout_s=10, what="DRAINING")
    assert stopping.is_alive(), "the drain waits for the running job"
    gate.set()
    stopping.join(30)
    assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"], "committed by the drain"
    assert driver.committed() == 1
    assert _health(driver, "STOPPED")[-1]["running"] == []


def test_a_job_given_up_at_the_stop_is_not_handed_out_again(
    drive: DriveWorker, gate: threading.Event
) -> None:
    first = drive(blocking_app(gate), worker_id="first", drain_timeout_s=0.5)
    (execution_id,) = first.fire(execution_requested())
    first.step()
    first.shut_down(wait=False)
    assert first.loop.stats.given_up == 1
    [failed] = first.events(execution_id, "FAILED")
    assert failed["error"]["error_type"] == "WorkerStopped" and failed["error"]["retryable"]
    assert "(drain of 0.5 s)" in failed["error"]["message"]
    assert first.committed() == 1, "claimed when it started"

    gate.set()
    second = drive(blocking_app(gate), worker_id="second", broker=first.broker)
    (after,) = second.fire(execution_requested(params={"block": False}))
    second.run_until(lambda: second.events(after, "SUCCEEDED"), what="the next record's run")
    assert second.events(after, "SUCCEEDED")[0]["worker_id"] == "second"
    assert second.kinds(execution_id) == ["STARTED", "FAILED"], "not handed out again"
