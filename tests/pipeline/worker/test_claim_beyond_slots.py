"""Claims beyond the free slots, on the driver (no broker), each transaction taking a
round trip of the test clock: with every slot taken, a type whose runs are shorter than a
claim's round trip has as many more due records claimed as its slots run in one round
trip, each launched as a run ends, so the worker does not wait a claim's round trip for
every ``concurrency`` runs (pipeline/worker/engine.py, ``_claim_beyond_slots``); a type
whose runs are longer never has."""

from __future__ import annotations

import threading

from jobstream._pipeline.runtime.schedule import DEFAULT_INTERVAL_S
from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker
from tests.support.waiting import wait_for

ROUND_TRIP_MS = 20


def _run_all(drive: DriveWorker, run_ms: int, count: int) -> tuple[int, int]:
    """Run ``count`` records due at once on 4 slots, each run ending ``run_ms`` of the
    test clock after it began; (the worker's transactions for them, the most runs
    claimed and waiting for a slot at once)."""
    app = WorkerApp()
    begun: dict[str, threading.Event] = {}
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            release = begun.setdefault(ctx.execution_id, threading.Event())
        release.wait(60)

    driver = drive(app, concurrency=4, commit_interval_s=DEFAULT_INTERVAL_S)
    driver.take_round_trips(ROUND_TRIP_MS)
    lane, inflight = driver.loop.lanes[0], driver.loop.inflight

    def turn() -> int:
        """One step; the runs it launched begin, then end ``run_ms`` later (the clock
        moving 1 ms at least); the runs claimed ahead after the step."""
        driver.step(times=1)
        ahead = len(inflight.ahead)
        launched = len(driver.launches.started) if driver.launches is not None else 0
        wait_for(lambda: len(begun) == launched, timeout_s=30, interval_s=0.001,
                 what="the runs to begin")  # fmt: skip
        driver.clock.now_ms += max(1, run_ms)
        with lock:
            for release in begun.values():
                release.set()

        def ended() -> bool:
            if inflight.slots:
                driver.loop.collect(wait_s=0.05)
            return not inflight.slots

        wait_for(ended, timeout_s=30, interval_s=0.001, what="the runs' ends")
        return ahead

    [warm] = driver.fire(execution_requested())
    while not driver.events(warm, "SUCCEEDED"):
        turn()  # the type's runs measured once
    before, most = lane.tx.transactions, 0
    ids = driver.fire(*(execution_requested() for _ in range(count)))
    while not all(driver.events(e, "SUCCEEDED") for e in ids):
        most = max(most, turn())
    assert all(driver.kinds(e).count("STARTED") == 1 for e in ids)
    return lane.tx.transactions - before, most


def test_short_runs_are_claimed_beyond_the_free_slots(drive: DriveWorker) -> None:
    transactions, most = _run_all(drive, 0, 200)
    # As many as four slots run in a claim's round trip.
    assert most > 4, f"at most {most} runs claimed beyond the slots at once"
    # Claims for the free slots alone take 4 runs each: 50 transactions at least.
    assert transactions < 50, f"{transactions} transactions for 200 runs of 4 slots"


def test_long_runs_are_claimed_for_free_slots_only(drive: DriveWorker) -> None:
    _, most = _run_all(drive, 150, 12)
    assert most == 0, f"{most} runs of 150 ms claimed beyond the slots"
