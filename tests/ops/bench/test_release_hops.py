"""The release's hops, from the instants of its records."""

from __future__ import annotations

from typing import Any

from jobstream._ops.bench.events import LOGGED_AT
from jobstream._ops.bench.release_hops import HOPS, hop_key, release_hops


def event(kind: str, job: str, at: int, logged: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "job_id": job, "at_ms": at, LOGGED_AT: at if logged is None else logged}


def test_each_hop_runs_from_one_records_instant_to_the_next() -> None:
    events = [event("SUCCEEDED", "a", 100, logged=130), event("SCHEDULED", "b", 200),
              event("FIRED", "b", 200, logged=215), event("STARTED", "b", 260),
              event("STARTED", "b", 900)]  # fmt: skip
    result = release_hops({"b": ["a"]}, events, {"a": 170})
    spans = {hop: result[hop_key(hop)]["max"] for hop in HOPS}
    assert spans == {"worker_commit": 30, "status": 40, "timers_read": 30, "timers_commit": 15,
                     "worker_start": 45}  # fmt: skip


def test_a_child_is_measured_from_the_parent_that_ended_last() -> None:
    events = [event("SUCCEEDED", "b", 100, logged=110), event("SUCCEEDED", "c", 300, logged=350),
              event("SCHEDULED", "d", 420), event("FIRED", "d", 420, logged=430),
              event("STARTED", "d", 440)]  # fmt: skip
    result = release_hops({"d": ["b", "c"]}, events, {"b": 150, "c": 400})
    assert result[hop_key("worker_commit")]["max"] == 50
    assert result[hop_key("status")]["max"] == 50


def test_children_without_every_instant_are_left_out_but_their_starts_count() -> None:
    events = [event("SUCCEEDED", "a", 100), event("STARTED", "b", 1000),
              event("STARTED", "c", 3000)]  # fmt: skip
    result = release_hops({"b": ["a"], "c": ["a"]}, events, {})
    assert result[hop_key("status")]["count"] == 0
    assert result["children_start_per_s"] == 1.0  # two starts 2 s apart
