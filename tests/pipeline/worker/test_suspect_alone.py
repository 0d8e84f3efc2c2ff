"""A suspect (a retry whose last attempt's process died) runs alone, on the driver (no
broker), even beside records fired ahead of their instant: the worker claims none of them
while the suspect runs, so none is launched beside it (pipeline/worker/quarantine.py)."""

from __future__ import annotations

import threading

from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, suspect
from tests.pipeline.worker.support import DriveWorker


def test_records_fired_ahead_wait_until_the_suspect_has_run_alone(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    suspect_running = threading.Event()
    beside: list[str] = []

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        if ctx.params.get("suspect"):
            suspect_running.set()
            gate.wait(60)
            suspect_running.clear()
        elif suspect_running.is_set():
            beside.append(ctx.execution_id)

    driver = drive(app, concurrency=4)
    now = driver.clock.now_ms
    [alone] = driver.fire(suspect(now, {"suspect": True}))
    driver.step()
    driver.run_until(suspect_running.is_set, what="the suspect's run")
    others = driver.fire(*(execution_requested(due_ms=now + 600) for _ in range(5)))
    driver.advance(1000, every_ms=10)
    assert not any(driver.kinds(e) for e in others), "none claimed while the suspect runs"
    gate.set()
    driver.run_until(lambda: driver.events(alone, "SUCCEEDED"), what="the suspect's end")
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in others),
                     what="the others' runs")  # fmt: skip
    assert not beside, f"{len(beside)} of 5 ran beside the suspect"
