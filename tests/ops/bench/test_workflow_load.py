"""The workflow scenarios' arithmetic: release lateness from jobs.events."""

from __future__ import annotations

from typing import Any

from jobstream._ops.bench.workflow_load import diamonds_load, fanout_load, release_lateness


def event(kind: str, job: str, at: int) -> dict[str, Any]:
    return {"kind": kind, "job_id": job, "at_ms": at}


def test_a_child_is_late_from_its_last_parents_success_to_its_first_start() -> None:
    parents = {"b": ["a"], "c": ["a"], "d": ["b", "c"]}
    events = [event("SUCCEEDED", "a", 100), event("SCHEDULED", "b", 105),
              event("FIRED", "b", 110), event("STARTED", "b", 130),
              event("FIRED", "c", 110), event("STARTED", "c", 150), event("SUCCEEDED", "b", 140),
              event("SUCCEEDED", "c", 160), event("FIRED", "d", 165), event("STARTED", "d", 200),
              event("STARTED", "d", 900)]  # fmt: skip
    result = release_lateness(parents, events)
    assert (result["children"], result["children_started"]) == (3, 3)
    assert result["release_lateness_ms"]["p50"] == 40  # b 30, c 50, d 200 - 160 = 40
    assert result["release_lateness_ms"]["max"] == 50
    assert result["release_fire_lateness_ms"]["max"] == 10
    assert result["release_scheduled_lateness_ms"]["count"] == 1
    assert result["release_scheduled_lateness_ms"]["max"] == 5


def test_a_child_whose_parent_never_succeeded_is_not_counted() -> None:
    events = [event("DEAD_LETTERED", "a", 100), event("STARTED", "b", 130)]
    assert release_lateness({"b": ["a"]}, events)["children_started"] == 0


def test_the_loads_count_every_job() -> None:
    assert len(fanout_load(10_000, None).offsets_ms) == 10_001
    diamonds = diamonds_load(1_000, None)
    assert len(diamonds.offsets_ms) == 4_000 and diamonds.offsets_ms[-1] == 9_990
