"""A lane's slots per partition index, taken by runs and given back when they return."""

from __future__ import annotations

import pytest

from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.worker.slots import PartitionSlots

LIMITS = ConcurrencyLimits({"report.generate": 8}, partitions=6)  # 2, 2, 1, 1, 1, 1


def test_an_index_takes_runs_up_to_its_slots() -> None:
    slots = PartitionSlots("report.generate", LIMITS)
    assert slots.limited and slots.in_use == 0
    slots.take(0)
    assert slots.free(0)
    slots.take(0)
    assert not slots.free(0) and slots.free(1)
    slots.take(2)
    assert not slots.free(2) and slots.in_use == 3
    slots.give(0)
    assert slots.free(0) and slots.in_use == 2


def test_an_index_with_no_slot_is_never_free_and_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ConcurrencyLimits({"report.generate": 2}, partitions=6)
    slots = PartitionSlots("report.generate", limits)
    assert [slots.free(p) for p in range(6)] == [True, True, False, False, False, False]
    assert not slots.free(9)  # beyond the configured count: no slot either
    slots.check_fetched(0)
    slots.check_fetched(4)
    slots.check_fetched(4)
    warnings = [r for r in caplog.records if "no slot" in r.getMessage()]
    assert [(vars(r)["partition"], vars(r)["limit"]) for r in warnings] == [(4, 2)]


def test_a_type_with_no_limit_is_always_free() -> None:
    slots = PartitionSlots("image.render", LIMITS)
    for _ in range(100):
        slots.take(3)
    assert not slots.limited and slots.free(3) and slots.in_use == 0
    slots.give(3)
