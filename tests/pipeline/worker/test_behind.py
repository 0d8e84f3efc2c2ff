"""A worker behind its records fired ahead, on the driver (no broker): once a run it
claimed ahead waits past its instant for a slot, it claims nothing more ahead, so what a
crash would take down with it stays near what it runs (docs/lifecycle.md, "Firing
ahead")."""

from __future__ import annotations

import threading

from jobstream._pipeline.worker import WorkerApp
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker


def test_a_worker_behind_claims_nothing_more_ahead(
    drive: DriveWorker, gate: threading.Event, gated_app: WorkerApp
) -> None:
    driver = drive(gated_app, concurrency=2, claim_ahead_s=0.2)  # held until 200 ms ahead
    # Four due every 100 ms for 2 s, sent 3 s ahead: 40 a second, for two slots held by
    # runs that do not end until the gate opens.
    first = driver.clock.now_ms + 3000
    ids = driver.fire(*(execution_requested(due_ms=first + 100 * (i // 4))
                        for i in range(80)))  # fmt: skip
    most = 0
    for _ in range(500):
        driver.advance(10)
        most = max(most, len(driver.loop.inflight.ahead))
    # Claimed ahead: the first instant's four, and those of the instants claimed before a
    # run waited past its instant (due within 200 ms of the first: 12). All 80 otherwise.
    assert 4 <= most <= 16, f"{most} runs claimed ahead at once, of 80"
    gate.set()
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")
