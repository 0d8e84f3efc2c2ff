"""Records fired ahead of their due instant (JOBSTREAM_FIRE_LEAD), on the driver (no
broker): a worker holds each until its instant, never starting it before, claims it
ahead without a slot and keeps its lease with heartbeats meanwhile. (A cancel that
arrives meanwhile: test_driver.py.)"""

from __future__ import annotations

import threading

from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker


def _noting_app(driver: list[WorkerDriver], began: dict[str, int],
                running: list[int] | None = None) -> WorkerApp:  # fmt: skip
    """An app whose runs note the test clock when they begin (and the most running at
    once in ``running``: [now, most])."""
    app = WorkerApp()
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            began[ctx.execution_id] = driver[0].clock.now_ms
            if running is not None:
                running[0] += 1
                running[1] = max(running[1], running[0])
        if running is not None:
            with lock:
                running[0] -= 1

    return app


def test_records_fired_ahead_start_on_their_instant_not_before(drive: DriveWorker) -> None:
    began: dict[str, int] = {}
    made: list[WorkerDriver] = []
    driver = drive(_noting_app(made, began), claim_ahead_s=0.2)  # held until 200 ms ahead
    made.append(driver)
    base = driver.clock.now_ms + 6000
    ids = driver.fire(*(execution_requested(due_ms=base + i * 400) for i in range(4)))
    driver.step()
    assert len(driver.loop.lanes[0].early) == 4, "the four held before their instant"
    driver.advance(8000, every_ms=10)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")
    for i, execution_id in enumerate(ids):
        [started] = driver.events(execution_id, "STARTED")
        assert began[execution_id] >= base + i * 400, "not begun before its instant"
        assert started["at_ms"] == base + i * 400
    assert sorted(ids, key=began.__getitem__) == ids, "they start in the order of their instants"


def test_runs_claimed_ahead_hold_no_slot_until_their_instant(drive: DriveWorker) -> None:
    """Forty records due at one instant, a worker of four slots: every one is claimed
    (its STARTED committed) before the instant, not four at a time after it, and still no
    more than four handlers run at once, none before the instant."""
    began: dict[str, int] = {}
    running = [0, 0]
    made: list[WorkerDriver] = []
    driver = drive(_noting_app(made, began, running), concurrency=4, claim_ahead_s=2.0)
    made.append(driver)
    due = driver.clock.now_ms + 6000
    ids = driver.fire(*(execution_requested(due_ms=due) for _ in range(40)))
    driver.advance(4000)
    driver.step()
    assert all(driver.kinds(e) == ["STARTED"] for e in ids), "every STARTED before the instant"
    assert len(driver.loop.inflight.ahead) == 40 and not began, "claimed ahead, none launched"
    driver.advance(2000)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")
    assert min(began.values()) >= due and running[1] <= 4
    assert not driver.loop.inflight.ahead and not driver.loop.inflight.slots


def test_runs_claimed_ahead_keep_their_lease_with_heartbeats_until_their_instant(
    drive: DriveWorker,
) -> None:
    """A run claimed seconds ahead holds a lease from its STARTED on: the worker beats for
    it every ``heartbeat_s`` before its launch as after, so the lease cannot end while it
    waits for its instant."""
    began: dict[str, int] = {}
    made: list[WorkerDriver] = []
    driver = drive(_noting_app(made, began), claim_ahead_s=5.0, heartbeat_s=0.5)
    made.append(driver)
    due = driver.clock.now_ms + 7000
    (execution_id,) = driver.fire(execution_requested(due_ms=due))
    driver.advance(2000)
    [claimed] = driver.events(execution_id, "STARTED")
    driver.advance(1500, every_ms=100)
    beats = driver.events(execution_id, "HEARTBEAT")
    assert [b["at_ms"] - claimed["at_ms"] + 5000 for b in beats] == [500, 1000, 1500]
    assert not began, "beats before the instant, none launched"
    driver.advance(3500, every_ms=100)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="the run")
    assert began[execution_id] == due and claimed["at_ms"] == due
