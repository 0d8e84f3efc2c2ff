"""Misfire policies after an outage, on an hourly UTC schedule whose instants are easy to read."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from jobstream._pipeline.clock import ms_of
from jobstream._pipeline.scheduling.cron import CronSpec, MisfirePolicy, next_due_ms
from jobstream._pipeline.scheduling.misfire import MAX_CATCHUP_RUNS, DueRuns, due_runs

JOB = "01JOBJOBJOBJOBJOBJOBJOBJOB"
HOUR = 3_600_000


def t(
    hour: int, minute: int = 0, second: int = 0, ms: int = 0, day: int = 1, month: int = 5
) -> int:
    """An instant on a UTC wall clock in 2026 (May 1st unless told)."""
    return ms_of(datetime(2026, month, day, hour, minute, second, ms * 1000, tzinfo=UTC))


def hourly(**fields: Any) -> CronSpec:
    return CronSpec(expression="0 * * * *", **fields)


# Down from just after the 10:00 run until 13:20: 11:00, 12:00 and 13:00 were missed.
LAST, NOW = t(10), t(13, 20)


def test_skip_runs_nothing_and_goes_on() -> None:
    got = due_runs(
        hourly(misfire=MisfirePolicy.SKIP), last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0
    )
    assert got.run_now == ()
    assert got.next_due_ms == t(14)


def test_run_once_runs_the_latest_missed() -> None:
    got = due_runs(hourly(), last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0)
    assert got.run_now == (t(13),)
    assert got.next_due_ms == t(14)


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        (HOUR, (t(13),)),  # the default: 12:20 onwards
        (2 * HOUR + 10 * 60_000, (t(12), t(13))),
        (3 * HOUR + 20 * 60_000, (t(11), t(12), t(13))),  # 10:00 exactly, already handled
        (24 * HOUR, (t(11), t(12), t(13))),
    ],
)
def test_run_all_runs_each_within_the_window_oldest_first(
    window: int, expected: tuple[int, ...]
) -> None:
    spec = hourly(misfire=MisfirePolicy.RUN_ALL, catchup_window_ms=window)
    got = due_runs(spec, last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0)
    assert got.run_now == expected
    assert got.next_due_ms == t(14)


@pytest.mark.parametrize("policy", list(MisfirePolicy))
def test_a_fire_within_the_grace_is_on_time_under_every_policy(policy: MisfirePolicy) -> None:
    spec = hourly(misfire=policy, catchup_window_ms=0)
    for now in (t(13), t(13, 0, 30), t(13, 1)):  # 60 s late is still on time
        got = due_runs(spec, last_due_ms=t(13) - 1, now_ms=now, job_id=JOB, runs_so_far=0)
        assert got.run_now == (t(13),), now
        assert got.next_due_ms == t(14)


def test_one_ms_past_the_grace_is_a_misfire() -> None:
    spec = hourly(misfire=MisfirePolicy.SKIP)
    got = due_runs(spec, last_due_ms=t(13) - 1, now_ms=t(13, 1, ms=1), job_id=JOB, runs_so_far=0)
    assert got.run_now == ()
    custom = due_runs(
        spec, last_due_ms=t(13) - 1, now_ms=t(13, 1, ms=1), job_id=JOB, runs_so_far=0, grace_ms=0
    )
    assert custom.run_now == ()
    exact = due_runs(
        spec, last_due_ms=t(13) - 1, now_ms=t(13), job_id=JOB, runs_so_far=0, grace_ms=0
    )
    assert exact.run_now == (t(13),)


def test_max_runs_spends_the_remaining_runs_on_the_oldest() -> None:
    spec = hourly(misfire=MisfirePolicy.RUN_ALL, catchup_window_ms=24 * HOUR, max_runs=5)
    got = due_runs(spec, last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=3)
    assert got.run_now == (t(11), t(12))
    assert got.next_due_ms is None
    spent = due_runs(spec, last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=5)
    assert spent.run_now == ()
    assert spent.next_due_ms is None
    once = due_runs(hourly(max_runs=5), last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=4)
    assert once == DueRuns(run_now=(t(13),), next_due_ms=None)


def test_end_at_bounds_the_catch_up() -> None:
    spec = hourly(misfire=MisfirePolicy.RUN_ALL, catchup_window_ms=24 * HOUR, end_at_ms=t(12, 30))
    got = due_runs(spec, last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0)
    assert got.run_now == (t(11), t(12))
    assert got.next_due_ms is None
    once = due_runs(
        hourly(end_at_ms=t(12, 30)), last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0
    )
    assert once.run_now == (t(12),)


def test_run_all_is_capped() -> None:
    spec = CronSpec(
        expression="* * * * *", misfire=MisfirePolicy.RUN_ALL, catchup_window_ms=24 * HOUR
    )
    now = t(12, 0, 30, day=2)
    got = due_runs(spec, last_due_ms=t(0), now_ms=now, job_id=JOB, runs_so_far=0)
    # The window starts at 12:00:30 on day 1; the first minute after it is 12:01.
    assert len(got.run_now) == MAX_CATCHUP_RUNS
    assert got.run_now[0] == t(12, 1)
    assert got.run_now[-1] == t(12, 1) + (MAX_CATCHUP_RUNS - 1) * 60_000
    assert got.next_due_ms == t(12, 1, day=2)


def test_run_once_after_a_long_outage_is_cheap() -> None:
    minutely = CronSpec(expression="* * * * *")
    started = time.perf_counter()
    got = due_runs(
        minutely, last_due_ms=t(0), now_ms=t(12, 0, 30, day=31), job_id=JOB, runs_so_far=0
    )
    assert got.run_now == (t(12, day=31),)
    assert time.perf_counter() - started < 1.0  # a forward walk would take 43,200 steps
    yearly = CronSpec(expression="0 0 1 1 *")
    got = due_runs(
        yearly,
        last_due_ms=ms_of(datetime(2020, 1, 1, tzinfo=UTC)),
        now_ms=NOW,
        job_id=JOB,
        runs_so_far=6,
    )
    assert got.run_now == (ms_of(datetime(2026, 1, 1, tzinfo=UTC)),)
    assert got.next_due_ms == ms_of(datetime(2027, 1, 1, tzinfo=UTC))


def test_jittered_catch_up_runs_the_same_fires_the_timer_would() -> None:
    spec = CronSpec(
        expression="*/10 * * * *",
        misfire=MisfirePolicy.RUN_ALL,
        catchup_window_ms=24 * HOUR,
        jitter_ms=HOUR,
    )
    chain, cursor = [], LAST
    while True:
        fire = next_due_ms(spec, cursor, job_id=JOB)
        assert fire is not None
        if fire > NOW:
            break
        chain.append(fire)
        cursor = fire
    got = due_runs(spec, last_due_ms=LAST, now_ms=NOW, job_id=JOB, runs_so_far=0)
    assert got.run_now == tuple(chain)
    # Nominals 10:00 (its jitter puts it after LAST) to 13:10; 13:20's jitter puts it past NOW.
    assert len(chain) == 20
    assert got.next_due_ms == fire


def test_clock_behind_the_last_fire_runs_nothing_and_never_repeats() -> None:
    got = due_runs(hourly(), last_due_ms=t(13), now_ms=t(12, 30), job_id=JOB, runs_so_far=0)
    assert got.run_now == ()
    assert got.next_due_ms == t(14)


def test_run_all_through_the_spring_forward_gap_runs_the_jump_once() -> None:
    spec = CronSpec(
        expression="*/15 * * * *",
        timezone="Europe/Paris",
        misfire=MisfirePolicy.RUN_ALL,
        catchup_window_ms=24 * HOUR,
    )
    # Down from 01:30 CET to 03:20 CEST (00:30Z to 01:20Z) on 2026-03-29.
    got = due_runs(
        spec,
        last_due_ms=t(0, 30, day=29, month=3),
        now_ms=t(1, 20, day=29, month=3),
        job_id=JOB,
        runs_so_far=0,
    )
    # 01:45 CET, then 02:00..02:45 (nonexistent) and 03:00 CEST all at the jump, 03:15 CEST.
    assert got.run_now == (
        t(0, 45, day=29, month=3),
        t(1, day=29, month=3),
        t(1, 15, day=29, month=3),
    )
    assert got.next_due_ms == t(1, 30, day=29, month=3)
