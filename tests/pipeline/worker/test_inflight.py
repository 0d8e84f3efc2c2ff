"""The runs a worker holds: a run claimed ahead of its instant holds no slot until seated."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import cast

from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.worker.app import Handler
from jobstream._pipeline.worker.inflight import InFlight, RunningJob
from jobstream._pipeline.worker.lane import Lane
from jobstream._pipeline.worker.offsets import OffsetRef
from jobstream._pipeline.worker.slots import PartitionSlots
from tests.pipeline.worker.executions import execution_requested

LIMITS = ConcurrencyLimits({"report.generate": 8}, partitions=6)


def _run(token: int, lane: Lane) -> RunningJob:
    execution = execution_requested(job_type="report.generate").data
    return RunningJob(token, lane, execution, OffsetRef("t", 0, token, 1), cast(Handler, None),
                      timeout_s=60.0, started=(b"", b""), deadline=math.inf,
                      next_beat=math.inf)  # fmt: skip


def test_a_run_claimed_ahead_takes_its_slot_when_seated() -> None:
    lane = cast(Lane, SimpleNamespace(slots=PartitionSlots("report.generate", LIMITS)))
    inflight = InFlight()
    run = _run(1, lane)
    inflight.add(run, ahead=True)
    assert not inflight.slots and inflight.ahead == {1: run}
    assert run.execution_id in inflight.active and inflight.job_running(run.execution.job_id)
    assert lane.slots.in_use == 1, "a limit's slot is held from the claim"
    inflight.seat(run)
    assert inflight.slots == {1: run} and not inflight.ahead
    assert inflight.release(1) is run and lane.slots.in_use == 0 and not inflight.slots


def test_a_run_claimed_ahead_that_ends_unlaunched_gives_its_limit_slot_back() -> None:
    lane = cast(Lane, SimpleNamespace(slots=PartitionSlots("report.generate", LIMITS)))
    inflight = InFlight()
    launched, cancelled = _run(1, lane), _run(2, lane)
    inflight.add(launched)
    inflight.add(cancelled, ahead=True)
    assert set(inflight.slots) == {1} and set(inflight.ahead) == {2} and lane.slots.in_use == 2
    assert inflight.release(2) is cancelled
    assert not inflight.ahead and set(inflight.slots) == {1} and lane.slots.in_use == 1


def test_heartbeats_come_due_by_instant_and_a_later_instant_replaces_an_earlier() -> None:
    lane = cast(Lane, SimpleNamespace(slots=PartitionSlots("report.generate", LIMITS)))
    inflight = InFlight()
    early, late, unscheduled = _run(1, lane), _run(2, lane), _run(3, lane)
    for run in (early, late, unscheduled):
        inflight.add(run, ahead=True)
    inflight.beat_at(early, 10.0)
    inflight.beat_at(late, 20.0)
    inflight.beat_at(unscheduled, math.inf)  # not launched, not claimed: no beat yet
    assert inflight.beats_due(9.9) == []
    assert inflight.beats_due(10.0) == [early]
    assert inflight.beats_due(10.0) == [], "due once per instant given"
    inflight.beat_at(late, 30.0)  # beaten sooner (a progress report): the 20.0 entry is stale
    assert inflight.beats_due(25.0) == []
    assert inflight.beats_due(30.0) == [late]
    assert inflight.beats_due(1e9) == []


def test_a_reported_run_gets_no_heartbeat_and_is_neither_launched_nor_overdue() -> None:
    lane = cast(Lane, SimpleNamespace(slots=PartitionSlots("report.generate", LIMITS)))
    inflight = InFlight()
    running, ended, ahead = _run(1, lane), _run(2, lane), _run(3, lane)
    inflight.add(running)
    inflight.add(ended)
    inflight.add(ahead, ahead=True)
    for run in (running, ended, ahead):
        run.deadline = 5.0
        inflight.beat_at(run, 5.0)
    inflight.reported(ended)  # timed out: still holds its slot until its thread returns
    assert inflight.seated() == [running]
    assert inflight.overdue(5.0) == [running], "a run claimed ahead has no deadline yet"
    assert inflight.beats_due(5.0) == [running, ahead]


def test_the_heartbeats_of_ended_runs_do_not_pile_up() -> None:
    """Each run's entry outlives it by up to a heartbeat interval; past a bound the heap
    is rebuilt from the runs held, so thousands of short runs leave no trail."""
    lane = cast(Lane, SimpleNamespace(slots=PartitionSlots("report.generate", LIMITS)))
    inflight = InFlight()
    held = _run(0, lane)
    inflight.add(held)
    inflight.beat_at(held, 50.0)
    rebuilt = 0
    for token in range(1, 5001):
        run = _run(token, lane)
        inflight.add(run)
        filed = len(inflight._beats)
        inflight.beat_at(run, 10.0 + token / 1000)
        if len(inflight._beats) <= filed:  # rebuilt: the run being filed is in it
            rebuilt += 1
            assert (run.next_beat, run.token, run.execution_id) in inflight._beats
        inflight.reported(run)
        inflight.release(token)
    assert rebuilt and len(inflight._beats) <= 2 * len(inflight.active) + 1001
    assert inflight.beats_due(49.0) == [] and inflight.beats_due(50.0) == [held]
