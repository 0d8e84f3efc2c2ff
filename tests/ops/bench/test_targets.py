"""The benchmark's start targets: judged on the handlers' launches when there are some."""

from __future__ import annotations

from typing import Any

from jobstream._ops.bench.targets import verdicts


def _report(scenario: str, started: dict[str, float], launches: dict[str, Any],
            **more: Any) -> dict[str, Any]:  # fmt: skip
    return {"scenario": scenario, "lost": 0, "duplicates_unreported": 0, "submitted": 20_000,
            "start_lateness_ms": started, "launch_lateness": launches, "handler": "noop",
            "rate": 1_200, "jobs_per_s": 1_200, **more}  # fmt: skip


def _start_row(report: dict[str, Any]) -> tuple[str, bool | None]:
    row = next(row for row in verdicts(report) if "start" in row.metric)
    return row.value, row.ok


def test_a_run_claimed_ahead_is_judged_on_its_launches_not_on_its_started() -> None:
    # STARTED carries the instant for a run claimed ahead: 0 ms late by construction.
    late = {"count": 36_000, "p99_within_ms": 250.0, "max_within_ms": 500.0}
    assert _start_row(_report("steady", {"p99": 0.0, "max": 0.0}, late)) == (
        "launched within 250 ms (STARTED 0 ms)", False)  # fmt: skip
    prompt = {**late, "p99_within_ms": 50.0}
    assert _start_row(_report("steady", {"p99": 0.0, "max": 0.0}, prompt)) == (
        "launched within 50 ms (STARTED 0 ms)", True)  # fmt: skip


def test_without_launches_counted_started_is_the_measure() -> None:
    assert _start_row(_report("steady", {"p99": 80.0, "max": 90.0}, {"count": 0})) == (
        "80 ms", True)  # fmt: skip
    assert _start_row(_report("steady", {"p99": 180.0, "max": 190.0}, {})) == ("180 ms", False)


def test_a_burst_is_judged_on_the_bucket_every_launch_is_within() -> None:
    # Within 5 s, not within 2 s: 4 s cannot be told, so it is not met.
    launches = {"count": 20_000, "p99_within_ms": 2_000.0, "max_within_ms": 5_000.0}
    value, ok = _start_row(_report("burst", {"p99": 0.0, "max": 0.0}, launches))
    assert (value, ok) == ("launched within 5,000 ms (STARTED 0 ms)", False)
    value, ok = _start_row(_report("burst", {"p99": 0.0, "max": 0.0},
                                   {**launches, "max_within_ms": None}))  # fmt: skip
    assert (value, ok) == ("launched past the last bucket (STARTED 0 ms)", False)
    value, ok = _start_row(_report("burst", {"p99": 0.0, "max": 0.0},
                                   {**launches, "max_within_ms": 2_000.0}))  # fmt: skip
    assert (value, ok) == ("launched within 2,000 ms (STARTED 0 ms)", True)


def test_launches_told_by_every_run_are_the_measure() -> None:
    """With every start figure a launch the run told (launched_at_ms), the records'
    figure is exact: judged on it, not on the histogram's bucket."""
    late = {"count": 20_000, "p99_within_ms": 2_000.0, "max_within_ms": 5_000.0}
    told = {"start_launches_told": 20_000}
    started = {"count": 20_000, "p99": 900.0, "max": 1_800.0}
    assert _start_row(_report("burst", started, late, **told)) == (
        "1,800 ms (launches told by the runs)", True)  # fmt: skip
    partly = {"start_launches_told": 19_999}
    assert _start_row(_report("burst", started, late, **partly)) == (
        "launched within 5,000 ms (STARTED 1,800 ms)", False)  # fmt: skip
