"""Firing ahead (JOBSTREAM_FIRE_LEAD): the timers hand a job to its execution topic a
lead before its due instant, telling the instant; the worker starts it then."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_options
from tests.support.jobs import cancelled, cron_schedule, submitted
from tests.support.timers import MINUTE, T0, TOPICS, TimersDriver, driving, executions, kinds

LEAD = 500


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path, settings=Settings(fire_lead=LEAD))


def test_a_job_fires_a_lead_ahead_telling_its_due_instant(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    job.data["spec"]["timeout_ms"] = 60_000
    driver.step(T0, job)
    assert driver.step(T0 + 5000 - LEAD - 1) == []
    emits = driver.step(T0 + 5000 - LEAD)
    assert kinds(emits) == ["ExecutionRequested", "FIRED"]
    run = executions(emits)[0]
    assert (run["scheduled_at_ms"], run["fired_at_ms"]) == (T0 + 5000, T0 + 5000 - LEAD)
    assert run["deadline_ms"] == T0 + 5000 + 60_000, "the timeout counts from the instant"
    assert emits[1].value.data["lateness_ms"] == 0
    assert not emits[0].urgent, "a lead ahead, it may wait for the commit interval"
    assert driver.step(T0 + 5000) == []


def test_a_job_due_within_half_the_lead_commits_at_once(driver: TimersDriver) -> None:
    now = submitted(now_ms=T0, run_at_ms=T0)
    soon = submitted(now_ms=T0, run_at_ms=T0 + LEAD // 2 - 1)
    emits = driver.step(T0, now, soon)
    assert [e.urgent for e in emits if e.value.name == "ExecutionRequested"] == [True, True]


def test_a_cancel_between_the_firing_and_the_instant_reaches_the_workers(
    driver: TimersDriver,
) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 1000)
    driver.step(T0, job)
    run = executions(driver.step(T0 + 1000 - LEAD))[0]
    emits = driver.step(T0 + 800, cancelled(job.data["job_id"], now_ms=T0 + 800))
    assert kinds(emits) == ["CancelRequested"]
    assert emits[0].topic == TOPICS.control and emits[0].urgent
    assert emits[0].value.data["up_to_epoch"] >= run["epoch"]


def test_a_schedule_fires_each_run_a_lead_ahead_and_skips_none(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, cron=cron_schedule("* * * * *", max_runs=3))
    start = T0 - T0 % MINUTE
    driver.step(start + 1, job)
    fired = []
    for minute in range(1, 6):
        emits = driver.step(start + minute * MINUTE - LEAD)
        fired += [(run["scheduled_at_ms"], run["fired_at_ms"]) for run in executions(emits)]
        assert executions(driver.step(start + minute * MINUTE)) == []
    assert fired == [(start + m * MINUTE, start + m * MINUTE - LEAD) for m in (1, 2, 3)]


def test_a_job_under_a_rate_limit_fires_on_its_instant_not_ahead(driver: TimersDriver) -> None:
    # A limit caps firings: fired a lead ahead, the jobs it admits would all start on the
    # instant, beyond it. Another type's job still fires ahead.
    driver.processor.logic.throttle.board.set(Limit(LimitKey(job_type="image.render"), rate=50,
                                                    burst=5))  # fmt: skip
    limited = submitted(now_ms=T0, run_at_ms=T0 + 1000, job_type="image.render")
    free = submitted(now_ms=T0, run_at_ms=T0 + 1000, job_type="report.generate")
    driver.step(T0, limited, free)
    ahead = executions(driver.step(T0 + 1000 - LEAD))
    assert [run["job_id"] for run in ahead] == [free.data["job_id"]]
    assert executions(driver.step(T0 + 999)) == []
    on_time = executions(driver.step(T0 + 1000))
    assert [(run["job_id"], run["fired_at_ms"]) for run in on_time] == [
        (limited.data["job_id"], T0 + 1000)]  # fmt: skip


def test_with_a_lead_a_transaction_carries_at_most_a_thousand_firings_and_commits_then() -> None:
    assert timer_options(Settings(fire_lead=0), TIMER_OPTIONS) == TIMER_OPTIONS
    ahead = timer_options(Settings(fire_lead=1000), TIMER_OPTIONS)
    assert (ahead.commit_interval_ms, ahead.punctuate_limit, ahead.commit_max_records) == (
        250, 1000, 2000)  # each firing is two records: an execution and its FIRED
    assert timer_options(Settings(fire_lead=300), TIMER_OPTIONS).commit_interval_ms == 150
    chosen = TIMER_OPTIONS.evolve(commit_interval_ms=40)
    assert timer_options(Settings(fire_lead=1000), chosen) == chosen
