"""A run whose heartbeats no longer reach the brokers stops itself before its lease passes
at the status processor (pipeline/worker/lease.py); on the driver (no broker)."""

from __future__ import annotations

import threading

from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.lease import RunLease
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker

LEASE_S, HEARTBEAT_S = 8.0, 2.0
HELD_MS = 6000
"""3/4 of the lease: how long a run holds its lease here without a heartbeat landing."""


def test_a_lease_is_held_from_each_heartbeat_that_lands_and_lost_for_good() -> None:
    now = [100.0]
    lease = RunLease(lease_s=LEASE_S, claimed_at=100.0, clock=lambda: now[0])
    assert lease.until == 106.0 and lease.ok
    now[0] = 105.0
    lease.confirm(sent_at=104.0)  # landed: held from its send, not from its answer
    assert lease.until == 110.0
    lease.confirm(sent_at=101.0)  # an older one answered late moves nothing back
    assert lease.until == 110.0
    now[0] = 110.0
    assert not lease.ok
    lease.confirm(sent_at=109.5)  # sent in time but answered after the loss: still lost
    assert not lease.ok and lease.until == 110.0


class Watched:
    """A handler that works in steps while it holds its lease, as a careful one would."""

    def __init__(self) -> None:
        self.steps = 0
        self.saw_lease_lost = threading.Event()
        self.app = WorkerApp()
        self.app.handler("data.process")(self.run)

    def run(self, ctx: JobContext) -> str:
        while ctx.lease_ok and not ctx.cancelled:
            self.steps += 1
            ctx.wait_cancelled(0.01)
        if not ctx.lease_ok:
            self.saw_lease_lost.set()
        return "stopped"


def test_a_run_whose_heartbeats_land_keeps_its_lease_past_the_lease(drive: DriveWorker) -> None:
    watched = Watched()
    driver = drive(watched.app, heartbeat_s=HEARTBEAT_S, lease_s=LEASE_S)
    (execution_id,) = driver.fire(execution_requested())
    driver.step()
    driver.run_until(lambda: watched.steps > 0, what="the handler to begin")
    driver.advance(3 * HELD_MS, every_ms=500)
    assert driver.kinds(execution_id).count("HEARTBEAT") >= 8
    assert not watched.saw_lease_lost.is_set()
    assert driver.kinds(execution_id)[-1] == "HEARTBEAT", "still running"


def test_a_run_cut_off_stops_itself_and_fails_retryable(drive: DriveWorker) -> None:
    watched = Watched()
    driver = drive(watched.app, heartbeat_s=HEARTBEAT_S, lease_s=LEASE_S)
    (execution_id,) = driver.fire(execution_requested())
    driver.step()
    driver.run_until(lambda: watched.steps > 0, what="the handler to begin")
    driver.advance(2000, every_ms=500)  # a heartbeat lands at 2 s: held until 8 s
    driver.broker.unanswered = True  # then none lands
    driver.advance(HELD_MS - 600, every_ms=200)
    assert not watched.saw_lease_lost.is_set(), "held until 6 s after the last heartbeat landed"
    driver.advance(1000, every_ms=200)
    driver.run_until(watched.saw_lease_lost.is_set, what="the handler to see its lease lost")
    driver.run_until(lambda: driver.events(execution_id, "FAILED"), what="its FAILED")
    [failed] = driver.events(execution_id, "FAILED")
    assert failed["error"]["error_type"] == "LeaseLost" and failed["error"]["retryable"]
    assert "6 s" in failed["error"]["message"]
    driver.broker.unanswered = False
    driver.advance(HELD_MS, every_ms=500)
    assert driver.kinds(execution_id).count("FAILED") == 1
    assert driver.kinds(execution_id)[-1] == "FAILED", "nothing of the run after its end"


def test_a_run_claimed_ahead_whose_lease_lapsed_before_its_instant_never_launches(
    drive: DriveWorker,
) -> None:
    watched = Watched()
    driver = drive(watched.app, heartbeat_s=HEARTBEAT_S, lease_s=LEASE_S, claim_ahead_s=20.0)
    due = driver.clock.now_ms + 15_000
    (execution_id,) = driver.fire(execution_requested(due_ms=due))
    driver.broker.unanswered = True
    driver.step()
    assert driver.kinds(execution_id) == ["STARTED"], "claimed ahead"
    driver.advance(15_000, every_ms=500)
    driver.run_until(lambda: driver.events(execution_id, "FAILED"), what="its FAILED")
    assert watched.steps == 0, "never launched"
    assert driver.launches is not None and driver.launches.started == []
