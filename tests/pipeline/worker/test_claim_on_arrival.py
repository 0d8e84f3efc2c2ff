"""Claims of a burst as its records arrive (pipeline/worker/lane.py, options.BURST_HELD):
records the timers fired seconds ahead (a burst, under their adaptive lead) are claimed on
arrival once a worker holds as many as make a burst, up to ``claimed_ahead_most`` runs
held, and launched on their instant; fewer are claimed ``claim_ahead_s`` before their
instant, as a steady load is; a cancel in the lead ends a run never begun; a worker behind
claims nothing more ahead. No broker."""

from __future__ import annotations

import threading

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.timers.lead import LeadRule
from jobstream._pipeline.worker.options import WorkerOptions
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker, assert_cancelled, cancel_request
from tests.pipeline.worker.test_driver import Recorder

pytestmark = pytest.mark.fast

BURST = 10
"""Records held early that make a burst in these tests (2,000 by default)."""


def test_the_defaults_claim_a_burst_as_far_ahead_as_the_timers_fire() -> None:
    options = WorkerOptions()
    assert options.claim_ahead_s <= 0.2, "a steady load is claimed just before its instant"
    assert options.claim_on_arrival_above <= options.claimed_ahead_most
    assert options.claimed_ahead_most >= 20_000, "a burst of 20,000 held whole"
    assert LeadRule(least_ms=1000, most_ms=Settings().fire_lead_most).adapts


def test_a_burst_arriving_seconds_ahead_is_claimed_on_arrival_and_begins_on_its_instant(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_on_arrival_above=BURST)
    due = driver.clock.now_ms + 8000
    ids = driver.fire(*(execution_requested(due_ms=due) for _ in range(50)))
    driver.step()
    assert all(driver.kinds(e) == ["STARTED"] for e in ids), "claimed 8 s ahead"
    assert len(driver.loop.inflight.ahead) == 50 and not recorder.began
    driver.advance(7900)
    assert not recorder.began, "none before its instant"
    driver.advance(200)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")
    assert min(recorder.began.values()) >= due


def test_fewer_records_than_a_burst_are_claimed_just_before_their_instant(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_on_arrival_above=BURST)
    due = driver.clock.now_ms + 8000
    ids = driver.fire(*(execution_requested(due_ms=due) for _ in range(BURST - 1)))
    driver.step()
    assert all(driver.kinds(e) == [] for e in ids), "held unclaimed, not a burst"
    driver.advance(7700)
    assert all(driver.kinds(e) == [] for e in ids), "still more than 200 ms before"
    driver.advance(150)
    assert all(driver.kinds(e) == ["STARTED"] for e in ids), "claimed 200 ms before"
    driver.advance(200)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")
    assert min(recorder.began.values()) >= due


def test_a_burst_goes_on_being_claimed_on_arrival_to_its_last_record(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_on_arrival_above=BURST)
    due = driver.clock.now_ms + 8000
    first = driver.fire(*(execution_requested(due_ms=due) for _ in range(BURST)))
    driver.step()
    assert all(driver.kinds(e) == ["STARTED"] for e in first), "a burst: claimed on arrival"
    driver.advance(1000)
    last = driver.fire(*(execution_requested(due_ms=due) for _ in range(3)))
    driver.step()
    assert all(driver.kinds(e) == ["STARTED"] for e in last), \
        "its last records, fewer than a burst, claimed as they arrive too"
    driver.advance(7100)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in first + last),
                     what="the runs")  # fmt: skip


def test_the_runs_held_ahead_are_bounded(drive: DriveWorker) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claimed_ahead_most=5, claim_on_arrival_above=BURST)
    ids = driver.fire(*(execution_requested(due_ms=driver.clock.now_ms + 5000)
                        for _ in range(12)))  # fmt: skip
    driver.step()
    assert len(driver.loop.inflight.ahead) == 5
    assert sum(driver.kinds(e) == ["STARTED"] for e in ids) == 5, "the others wait unclaimed"
    driver.advance(5100)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in ids), what="the runs")


def test_a_cancel_inside_the_lead_ends_a_run_claimed_on_arrival_never_begun(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_on_arrival_above=1)
    job = execution_requested(due_ms=driver.clock.now_ms + 8000)
    [execution_id] = driver.fire(job)
    driver.step()
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.advance(8000)
    [ended] = driver.events(execution_id, "CANCELLED")
    assert_cancelled(ended, "driver")
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"] and not recorder.began


def test_a_worker_behind_claims_nothing_that_arrives_meanwhile(
    drive: DriveWorker, gate: threading.Event,
) -> None:
    recorder = Recorder(gate)
    driver = recorder.drive(drive, concurrency=2, claim_on_arrival_above=4)  # all bursts
    now = driver.clock.now_ms
    first = driver.fire(*(execution_requested(due_ms=now + 1000) for _ in range(4)))
    driver.step()
    driver.advance(1500)  # two run and hold their slots; two wait past their instant
    driver.run_until(lambda: len(recorder.began) == 2, what="two runs begun")
    later = driver.fire(*(execution_requested(due_ms=now + 6000) for _ in range(10)))
    driver.advance(500)
    assert all(driver.kinds(e) == [] for e in later), "behind: none claimed ahead"
    gate.set()
    driver.advance(4500)
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in first + later),
                     what="the runs")  # fmt: skip
