"""A run's records say when its handler really began (``launched_at_ms``), on the driver
(no broker): STARTED commits with the claim, before the launch, so a run claimed ahead
carries its due instant there however late its handler begins; its HEARTBEATs and its end
carry the launch by the worker's clock, and a run that never launched carries none."""

from __future__ import annotations

import threading

import pytest

from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker, cancel_request


class Held:
    """An app whose data.process runs note the test clock when they begin, then wait for
    ``release`` (sync or async handlers)."""

    def __init__(self, *, is_async: bool = False) -> None:
        self.began: dict[str, int] = {}
        self.begun = threading.Event()
        self.release = threading.Event()
        self.driver: WorkerDriver | None = None
        self.app = WorkerApp()

        def note(ctx: JobContext) -> None:
            assert self.driver is not None
            self.began[ctx.execution_id] = self.driver.clock.now_ms
            self.begun.set()

        if is_async:
            import asyncio

            @self.app.handler("data.process")
            async def work_async(ctx: JobContext) -> str:
                note(ctx)
                while not self.release.is_set():
                    await asyncio.sleep(0.005)
                return "done"
        else:
            @self.app.handler("data.process")
            def work(ctx: JobContext) -> str:
                note(ctx)
                self.release.wait(60)
                return "done"

    def drive(self, drive: DriveWorker, **options: object) -> WorkerDriver:
        self.driver = drive(self.app, **options)
        return self.driver


@pytest.mark.parametrize("is_async", [False, True], ids=["thread", "asyncio"])
def test_a_run_claimed_ahead_that_launches_late_carries_its_real_launch(
    drive: DriveWorker, is_async: bool
) -> None:
    """Claimed 5 s ahead, its STARTED says its due instant; the worker's next step comes
    140 ms after the instant, so the handler begins then: its HEARTBEAT and its SUCCEEDED
    say so, and its HEARTBEATs before the launch say nothing of one."""
    held = Held(is_async=is_async)
    driver = held.drive(drive, claim_ahead_s=5.0, heartbeat_s=0.5)
    due = driver.clock.now_ms + 7000
    (execution_id,) = driver.fire(execution_requested(due_ms=due))
    driver.advance(2000)
    driver.advance(1000, every_ms=100)
    [started] = driver.events(execution_id, "STARTED")
    assert started["at_ms"] == due, "STARTED commits with the claim, at the due instant"
    early_beats = driver.events(execution_id, "HEARTBEAT")
    assert early_beats and all(b["launched_at_ms"] is None for b in early_beats)

    driver.advance(due + 140 - driver.clock.now_ms)  # one step, 140 ms past the instant
    driver.run_until(held.begun.is_set, what="the handler to begin")
    assert held.began[execution_id] == due + 140
    driver.advance(600)
    [*_, beat] = driver.events(execution_id, "HEARTBEAT")
    assert beat["at_ms"] > due + 140 and beat["launched_at_ms"] == due + 140

    held.release.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="the run")
    [succeeded] = driver.events(execution_id, "SUCCEEDED")
    assert succeeded["launched_at_ms"] == due + 140
    assert succeeded["launched_at_ms"] - started["at_ms"] == 140, "the lateness STARTED hides"


def test_a_run_launched_after_its_claims_round_trip_says_so(drive: DriveWorker) -> None:
    """A record due now: STARTED at the start, the handler once the claim has committed,
    a round trip (40 ms of the test clock) later."""
    held = Held()
    driver = held.drive(drive)
    driver.take_round_trips(40)
    start = driver.clock.now_ms
    (execution_id,) = driver.fire(execution_requested(due_ms=start))
    driver.step()
    held.release.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="the run")
    [started] = driver.events(execution_id, "STARTED")
    [succeeded] = driver.events(execution_id, "SUCCEEDED")
    assert started["at_ms"] == start
    assert succeeded["launched_at_ms"] == held.began[execution_id] == start + 40


def test_a_run_cancelled_while_held_for_its_instant_carries_no_launch(
    drive: DriveWorker,
) -> None:
    """Handed to the executor 50 ms ahead (``launch_ahead_s``) and cancelled before its
    instant: it ends CANCELLED, its handler never begun, so with no launch."""
    held = Held()
    driver = held.drive(drive, claim_ahead_s=2.0, launch_ahead_s=0.05)
    job = execution_requested(due_ms=driver.clock.now_ms + 3000)
    (execution_id,) = driver.fire(job)
    driver.advance(2970, every_ms=10)  # 30 ms before: launched, held in the executor
    assert driver.loop.inflight.slots and not held.began
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.advance(10)  # the cancel reaches it while held: 20 ms before its instant
    driver.advance(30)  # its instant passed: the held run ends cancelled, never begun
    driver.run_until(lambda: driver.events(execution_id, "CANCELLED"), what="CANCELLED")
    [cancelled] = driver.events(execution_id, "CANCELLED")
    assert cancelled["launched_at_ms"] is None and not held.began
