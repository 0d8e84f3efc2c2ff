"""A pending one-off job moved to another run time (ScheduleChanged UPDATE with run_at_ms),
through the ProcessorDriver on real RocksDB files: it fires at the new time only, its old
schedule keys gone in the transaction that wrote the new ones; a job that fired, ended or
is recurring is left as it is."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jobstream._pipeline.limits.model import Limit
from jobstream._pipeline.model.time_keys import (
    OWNER_PREFIX,
    OWNER_UPPER_BOUND,
    SCHEDULE_LOWER_BOUND,
    SCHEDULE_UPPER_BOUND,
    decode_owner_schedule_key,
    decode_schedule_key,
)
from jobstream._pipeline.serde import Event
from tests.support.jobs import cancelled, cron_schedule, schedule_changed, submitted
from tests.support.timers import (
    DUE,
    MINUTE,
    RENDER,
    T0,
    TimersDriver,
    executions,
    held,
    kinds,
    load,
    make_driver,
)

HOUR = 3_600_000


def move(job_id: str, run_at_ms: int, now_ms: int) -> Event:
    return schedule_changed(job_id, "UPDATE", now_ms=now_ms, run_at_ms=run_at_ms)


def fire_times(driver: TimersDriver, job_id: str) -> tuple[list[int], list[int]]:
    """The instants the store schedules ``job_id`` at: by its schedule keys, by its owner's."""
    store = driver.store()
    by_time = [decode_schedule_key(key) for key, _ in
               store.scan(SCHEDULE_LOWER_BOUND, SCHEDULE_UPPER_BOUND)]  # fmt: skip
    by_owner = [decode_owner_schedule_key(key)[1:] for key, _ in
                store.scan(OWNER_PREFIX, OWNER_UPPER_BOUND)]  # fmt: skip
    return ([ms for ms, timer in by_time if timer == job_id],
            [ms for ms, timer in by_owner if timer == job_id])  # fmt: skip


def test_moved_later_it_fires_at_the_new_time_and_not_the_old(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    assert fire_times(driver, job_id) == ([T0 + 5000], [T0 + 5000])

    moved = driver.step(T0 + 10, move(job_id, T0 + MINUTE, now_ms=T0 + 10))
    assert kinds(moved) == ["SCHEDULED"]  # jobs.status shows the new due time
    event = moved[0].value.data
    assert (event["scheduled_at_ms"], event["detail"]) == (T0 + MINUTE, "run time moved")
    # one commit deleted the old keys and wrote the new ones; its changelog record is the
    # entry at its new time, from which a restore derives the same keys
    assert fire_times(driver, job_id) == ([T0 + MINUTE], [T0 + MINUTE])
    assert driver.changelog[0][-1][0] == job_id.encode()
    assert b'"due_ms":%d' % (T0 + MINUTE) in (driver.changelog[0][-1][1] or b"")

    assert driver.step(T0 + 5000) == []
    assert driver.step(T0 + MINUTE - 1) == []
    emits = driver.step(T0 + MINUTE + 2)
    assert [(r["scheduled_at_ms"], r["fired_at_ms"]) for r in executions(emits)] == [
        (T0 + MINUTE, T0 + MINUTE + 2)
    ]
    assert driver.step(T0 + HOUR) == []
    assert fire_times(driver, job_id) == ([], [])


def test_moved_earlier_it_fires_early_and_once(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + HOUR, params={"n": 1})
    job_id = job.data["job_id"]
    driver.step(T0, job)
    moved = driver.step(T0 + 10, move(job_id, T0 + 2000, now_ms=T0 + 10))
    assert moved[0].value.data["scheduled_at_ms"] == T0 + 2000
    assert driver.step(T0 + 1999) == []
    (run,) = executions(driver.step(T0 + 2000))
    assert (run["job_id"], run["scheduled_at_ms"], run["fired_at_ms"]) == (job_id, T0 + 2000,
                                                                           T0 + 2000)  # fmt: skip
    assert run["spec"]["params"] == '{"n":1}'  # the parameters as submitted
    assert driver.step(T0 + HOUR) == []


def test_moved_to_a_moment_ago_it_fires_at_once(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + HOUR)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    now = T0 + 30_000
    emits = driver.step(now, move(job_id, now - 20_000, now_ms=now))
    assert kinds(emits) == ["SCHEDULED", "ExecutionRequested", "FIRED"]
    assert executions(emits)[0]["scheduled_at_ms"] == now - 20_000
    assert driver.step(T0 + HOUR) == []


def test_the_same_move_twice_still_fires_once(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    again = move(job_id, T0 + 8000, now_ms=T0 + 10)
    driver.step(T0 + 10, again, again)
    assert fire_times(driver, job_id) == ([T0 + 8000], [T0 + 8000])
    assert len(executions(driver.step(T0 + 8000))) == 1
    assert driver.step(T0 + HOUR) == []


def test_a_job_that_fired_or_ended_is_not_moved(
    driver: TimersDriver, caplog: pytest.LogCaptureFixture
) -> None:
    fired = submitted(now_ms=T0, run_at_ms=T0 + 1000, idempotency_key="once")
    gone = submitted(now_ms=T0, run_at_ms=T0 + HOUR)
    driver.step(T0, fired, gone, cancelled(gone.data["job_id"], now_ms=T0))
    assert len(executions(driver.step(T0 + 1000))) == 1
    caplog.set_level(logging.INFO, logger="jobstream._pipeline.timers.logic")
    for job in (fired, gone):  # fired: its idempotency marker stays; ended: nothing stays
        job_id = job.data["job_id"]
        before = fire_times(driver, job_id)
        assert driver.step(T0 + 2000, move(job_id, T0 + 9000, now_ms=T0 + 2000)) == []
        assert fire_times(driver, job_id) == before
    assert driver.step(T0 + 9000) == []
    reasons = [getattr(r, "reason", None) for r in caplog.records
               if r.getMessage() == "schedule change ignored"]  # fmt: skip
    assert reasons == ["no pending run: it has fired, ended, or is unknown here"] * 2


def test_a_recurring_job_keeps_its_cron(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *"))
    job_id = job.data["job_id"]
    driver.step(start + 1, job)
    assert driver.step(start + 2, move(job_id, start + 30_000, now_ms=start + 2)) == []
    assert driver.step(start + 30_000) == []
    assert [r["scheduled_at_ms"] for r in executions(driver.step(start + MINUTE))] == [
        start + MINUTE
    ]


def test_a_moved_job_holds_one_due_instant(driver: TimersDriver) -> None:
    """After the move the job's requested time and its entry's due instant agree, so the
    execution carries one time, whatever reads it."""
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    driver.step(T0 + 10, move(job_id, T0 + MINUTE, now_ms=T0 + 10))
    (run,) = executions(driver.step(T0 + MINUTE))
    assert run["spec"]["run_at_ms"] == run["scheduled_at_ms"] == T0 + MINUTE


def test_a_one_off_job_takes_no_cron_and_no_pause(driver: TimersDriver) -> None:
    """The model's rules, as the API applies them with 409: a cron is for a recurring job,
    and only a schedule is paused."""
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    new_cron = schedule_changed(job_id, "UPDATE", now_ms=T0 + 1,
                                cron=cron_schedule("* * * * *"))  # fmt: skip
    assert driver.step(T0 + 1, new_cron, schedule_changed(job_id, "PAUSE", now_ms=T0 + 2)) == []
    assert [r["job_id"] for r in executions(driver.step(T0 + 5000))] == [job_id]


def test_a_job_a_rate_limit_holds_back_leaves_its_queue_for_the_new_time(
        tmp_path: Path) -> None:  # fmt: skip
    driver = make_driver(tmp_path, Limit(RENDER, rate=1, burst=1))
    try:
        ids = load(driver, 2)
        (ran,) = executions(driver.step(DUE))
        assert held(driver, RENDER) == 1
        (waiting,) = set(ids) - {ran["job_id"]}
        driver.step(DUE + 10, move(waiting, DUE + 10_000, now_ms=DUE + 10))
        assert held(driver, RENDER) == 0
        assert fire_times(driver, waiting) == ([DUE + 10_000], [DUE + 10_000])
        assert driver.step(DUE + 1000) == [] and driver.step(DUE + 5000) == []
        (run,) = executions(driver.step(DUE + 10_000))
        assert (run["job_id"], run["scheduled_at_ms"]) == (waiting, DUE + 10_000)
    finally:
        driver.close()
