"""The end-to-end benchmark's arithmetic: completions, losses, duplicates, lateness."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._ops.bench.tally import tally


def fired(job: str, due: int, at: int) -> dict[str, Any]:
    return {"kind": "FIRED", "job_id": job, "at_ms": at, "scheduled_at_ms": due}


def started(job: str, due: int, at: int, attempt: int = 1) -> dict[str, Any]:
    return {"kind": "STARTED", "job_id": job, "at_ms": at, "attempt": attempt,
            "execution": {"scheduled_at_ms": due}}  # fmt: skip


def ended(job: str, at: int, kind: str = "SUCCEEDED") -> dict[str, Any]:
    return {"kind": kind, "job_id": job, "at_ms": at}


def test_a_job_without_an_end_is_lost_and_lateness_is_measured_from_the_due_time() -> None:
    events = [fired("a", 1000, 1010), started("a", 1000, 1030), ended("a", 1040),
              fired("b", 2000, 2100), started("b", 2000, 2300)]  # fmt: skip
    result = tally(["a", "b"], events)
    assert (result["submitted"], result["completed"], result["lost"]) == (2, 1, 1)
    assert result["fire_lateness_ms"]["max"] == 100
    assert result["start_lateness_ms"]["p50"] == 30
    assert result["start_lateness_ms"]["max"] == 300
    assert result["end_lateness_ms"]["max"] == 40


def test_a_second_start_of_one_attempt_is_a_duplicate_unless_reported() -> None:
    events = [fired("a", 0, 5), started("a", 0, 10), started("a", 0, 20), ended("a", 30)]
    assert tally(["a"], events)["duplicates_unreported"] == 1
    reported = tally(["a"], [*events, {"kind": "DUPLICATE", "job_id": "a", "at_ms": 40}])
    assert (reported["duplicates"], reported["duplicates_unreported"]) == (1, 0)


def test_a_retry_is_a_new_attempt_not_a_duplicate() -> None:
    events = [fired("a", 0, 5), started("a", 0, 10), ended("a", 15, "FAILED"),
              started("a", 500, 510, attempt=2), ended("a", 520)]  # fmt: skip
    result = tally(["a"], events)
    assert (result["duplicates"], result["completed"]) == (0, 1)


def test_jobs_per_second_runs_from_the_first_due_time_to_the_last_end() -> None:
    events = [e for i in range(10) for e in (fired(f"j{i}", i * 100, i * 100 + 1),
                                             ended(f"j{i}", i * 100 + 100))]  # fmt: skip
    assert tally([f"j{i}" for i in range(10)], events)["jobs_per_s"] == pytest.approx(10.0)


def test_events_of_other_jobs_are_ignored() -> None:
    assert tally(["a"], [fired("x", 0, 1), ended("x", 2)])["completed"] == 0


def test_start_lateness_is_also_given_per_owner() -> None:
    events = [{**started("a", 1000, 1100), "owner": "flood"},
              {**started("b", 1000, 1020), "owner": "small"}]  # fmt: skip
    by_owner = tally(["a", "b"], events)["start_lateness_by_owner_ms"]
    assert by_owner["flood"]["max"] == 100 and by_owner["small"]["max"] == 20


def test_start_lateness_is_the_told_launch_of_a_run_claimed_ahead() -> None:
    """STARTED at the due instant (claimed ahead); its HEARTBEAT and SUCCEEDED tell the
    handler began 250 ms late: the run's figure. A run that tells none keeps its STARTED's."""
    run = {"execution_id": "a:1000:1"}
    events = [{**started("a", 1000, 1000), **run},
              {"kind": "HEARTBEAT", "job_id": "a", "at_ms": 1400, "launched_at_ms": 1250, **run},
              {**ended("a", 1500), "launched_at_ms": 1250, **run},
              started("b", 1000, 1040), ended("b", 1100)]  # fmt: skip
    result = tally(["a", "b"], events)
    assert (result["start_lateness_ms"]["max"], result["completed"]) == (250, 2)
    assert tally(["b"], events[3:])["start_lateness_ms"]["max"] == 40
