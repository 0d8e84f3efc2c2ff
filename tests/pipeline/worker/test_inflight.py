"""The runs a worker holds: a run claimed ahead of its instant holds no slot until seated."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import cast

from pipeline.concurrency import ConcurrencyLimits
from pipeline.worker.app import Handler
from pipeline.worker.inflight import InFlight, RunningJob
from pipeline.worker.lane import Lane
from pipeline.worker.offsets import OffsetRef
from pipeline.worker.slots import PartitionSlots
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
