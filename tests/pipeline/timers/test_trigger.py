"""JobTriggered on the timer processor: run a scheduled or recurring job now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.config import Settings
from pipeline.jobs.commands import trigger_event
from pipeline.timers.runner import Timers
from tests.pipeline.timers.test_processor import MINUTE, T0, TimersDriver, executions, kinds
from tests.support.jobs import cron_schedule, schedule_changed, submitted


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    driver = TimersDriver(Timers(Settings()), tmp_path, now_ms=T0)
    yield driver
    driver.close()



def test_a_one_off_job_fires_at_once_and_not_again_at_its_time(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 3_600_000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    emits = driver.step(T0 + 10, trigger_event(job_id, now_ms=T0 + 10))
    assert kinds(emits) == ["ExecutionRequested", "FIRED"]
    assert executions(emits)[0]["fired_at_ms"] == T0 + 10
    assert driver.step(T0 + 3_600_000) == []
    # fired already: a second trigger has nothing to run
    assert driver.step(T0 + 3_600_010, trigger_event(job_id, now_ms=T0 + 3_600_010)) == []


def test_a_recurring_job_runs_now_and_keeps_its_schedule(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *", max_runs=3))
    job_id = job.data["job_id"]
    driver.step(start + 1, job)
    now = start + 20_000
    emits = driver.step(now, trigger_event(job_id, now_ms=now))
    (run,) = executions(emits)
    assert (run["scheduled_at_ms"], run["fired_at_ms"]) == (now, now)
    assert [r["scheduled_at_ms"] for r in executions(driver.step(start + MINUTE))] == [
        start + MINUTE
    ]
    # the trigger counted towards max_runs = 3: one more regular run, then none
    assert len(executions(driver.step(start + 2 * MINUTE))) == 1
    assert executions(driver.step(start + 3 * MINUTE)) == []


def test_the_last_allowed_run_triggered_ends_the_schedule(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *", max_runs=1))
    driver.step(start + 1, job)
    assert len(executions(driver.step(start + 5, trigger_event(job.data["job_id"],
                                                               now_ms=start + 5)))) == 1
    assert executions(driver.step(start + MINUTE)) == []


def test_a_paused_or_unknown_job_is_not_triggered(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *"))
    job_id = job.data["job_id"]
    driver.step(start + 1, job, schedule_changed(job_id, "PAUSE", now_ms=start + 1))
    assert driver.step(start + 2, trigger_event(job_id, now_ms=start + 2)) == []
    assert driver.step(start + 3, trigger_event("01JD3W6Q8Z5X7M2K4N9P0R1S2T",
                                                now_ms=start + 3)) == []


def test_updating_a_paused_schedule_leaves_it_paused(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *"))
    job_id = job.data["job_id"]
    driver.step(start + 1, job, schedule_changed(job_id, "PAUSE", now_ms=start + 1))
    hourly = cron_schedule("0 * * * *")
    update = schedule_changed(job_id, "UPDATE", now_ms=start + 2, cron=hourly)
    assert driver.step(start + 2, update) == []
    assert executions(driver.step(start + 3 * MINUTE)) == []
    resumed = driver.step(start + 4 * MINUTE, schedule_changed(job_id, "RESUME",
                                                               now_ms=start + 4 * MINUTE))
    assert kinds(resumed) == ["RESUMED"]
    assert resumed[0].value.data["scheduled_at_ms"] % 3_600_000 == 0
