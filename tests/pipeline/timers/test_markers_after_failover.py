"""A standby taking over (JOBSTREAM_MARKERS_TRUSTED_BEFORE): a fired job's marker written
since the instant given does not make a submission of the job a no-op, since MirrorMaker
may have copied the marker without the execution fired with it (ADR 0012); an older one
does, and so does one written since the standby took over (JOBSTREAM_MARKERS_TRUSTED_FROM,
by default the timers' start)."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.config import Settings
from tests.support.jobs import submitted
from tests.support.timers import T0, driving, kinds


def _fired_then_submitted_again(tmp_path: Path, trusted_before: int | None,
                                trusted_from: int | None = None) -> list[str]:  # fmt: skip
    settings = Settings(fire_lead=0, markers_trusted_before=trusted_before,
                        markers_trusted_from=trusted_from)  # fmt: skip
    driver = next(driving(tmp_path, settings=settings))
    try:
        job = submitted(now_ms=T0, run_at_ms=T0 + 1000, idempotency_key="order-1")
        driver.step(T0, job)
        assert kinds(driver.step(T0 + 1000)) == ["ExecutionRequested", "FIRED"]
        return kinds(driver.step(T0 + 2000, job))
    finally:
        driver.close()


def test_a_marker_holds_without_the_setting(tmp_path: Path) -> None:
    assert _fired_then_submitted_again(tmp_path, None) == []


def test_a_marker_written_before_the_instant_holds(tmp_path: Path) -> None:
    assert _fired_then_submitted_again(tmp_path, T0 + 1001) == []


def test_a_marker_written_since_the_instant_fires_the_job_again(tmp_path: Path) -> None:
    again = _fired_then_submitted_again(tmp_path, T0 + 1000, trusted_from=T0 + 5000)
    assert again == ["SCHEDULED", "ExecutionRequested", "FIRED"], "overdue: fired at once"


def test_a_marker_the_standby_wrote_since_it_took_over_holds(tmp_path: Path) -> None:
    """A pending job fired on the standby, then met again by the rewound intake, fires once."""
    assert _fired_then_submitted_again(tmp_path, T0 - 30_000, trusted_from=T0 + 500) == []
    assert _fired_then_submitted_again(tmp_path, T0 - 30_000, trusted_from=T0 + 1001) == [
        "SCHEDULED", "ExecutionRequested", "FIRED"], "written before it: the primary's"
