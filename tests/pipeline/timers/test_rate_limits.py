"""Rate limits where jobs fire, through the ProcessorDriver on real RocksDB files: held jobs
wait on disk in their limit's queue and fire as tokens come, none early, none lost, with
their throttled time apart from lateness; a change of limit applies at the next tick."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.model.records import typed
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status.machine import transition
from jobstream._pipeline.timers.state import TimerState
from tests.support.jobs import cancelled, cron_schedule, submitted
from tests.support.timers import (
    ALONE,
    DUE,
    RENDER,
    T0,
    TimersDriver,
    driving,
    executions,
    held,
    kinds,
    load,
    make_driver,
)

TICK = 20


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path, Limit(RENDER, rate=50, burst=5), settings=ALONE)


def run_until(driver: TimersDriver, end_ms: int) -> list[dict]:
    """Tick every 20 ms from DUE to ``end_ms``; the FIRED events, in order."""
    fired = []
    for now in range(DUE, end_ms + 1, TICK):
        fired += [e.value.data for e in driver.step(now) if e.value.name == "JobLifecycle"
                  and e.value.data["kind"] == "FIRED"]  # fmt: skip
    return fired


def test_a_limited_type_fires_at_its_rate_after_its_burst_and_none_early(
        driver: TimersDriver) -> None:  # fmt: skip
    ids = load(driver, 100)
    fired = run_until(driver, DUE + 3000)
    assert sorted(f["job_id"] for f in fired) == sorted(ids)
    for k, event in enumerate(sorted(fired, key=lambda f: f["at_ms"])):
        assert event["at_ms"] >= DUE + (k + 1 - 5) * 1000 // 50  # k-th: after (k - burst)/rate
    last = max(f["at_ms"] for f in fired)
    assert DUE + 1880 - TICK <= last <= DUE + 1900 + TICK  # 95 after the burst, at 50/s
    assert held(driver, RENDER) == 0


def test_held_jobs_wait_on_disk_and_report_their_throttled_time(driver: TimersDriver) -> None:
    load(driver, 20)
    first = driver.step(DUE)
    assert len(executions(first)) == 5
    assert held(driver, RENDER) == 15
    assert all(f.value.data["throttled_ms"] is None for f in first
               if f.value.name == "JobLifecycle")  # fmt: skip
    fired = run_until(driver, DUE + 1000)
    assert len(fired) == 15
    for event in fired:
        assert event["throttled_ms"] > 0
        assert event["lateness_ms"] == event["at_ms"] - DUE
        assert event["throttled_ms"] <= event["lateness_ms"]


def test_other_types_fire_at_once_beside_a_held_flood(driver: TimersDriver) -> None:
    load(driver, 50)
    other = submitted(now_ms=T0, run_at_ms=DUE, job_type="data.process")
    driver.step(T0, other)
    fired = executions(driver.step(DUE))
    assert other.data["job_id"] in {e["job_id"] for e in fired}


def test_held_jobs_survive_a_restore_from_the_changelog(tmp_path: Path) -> None:
    limit = Limit(RENDER, rate=10, burst=1)
    driver = make_driver(tmp_path / "a", limit)
    ids = load(driver, 10)
    driver.step(DUE)
    changelog = driver.changelog[0]
    driver.close()

    restored = make_driver(tmp_path / "b", limit)
    tx = PartitionBatch(restored.store())
    for key, value in changelog:
        restored.processor.restore(tx, key, value)
    tx.commit(len(changelog) - 1)
    assert held(restored, RENDER) == 9
    fired = run_until(restored, DUE + 2000)
    assert len(fired) == 9 and {f["job_id"] for f in fired} < set(ids)
    restored.close()


def test_a_raised_limit_applies_at_the_next_tick_and_a_cleared_one_releases_all(
        tmp_path: Path) -> None:  # fmt: skip
    driver = make_driver(tmp_path, Limit(RENDER, rate=1, burst=1))
    load(driver, 300)
    assert len(executions(driver.step(DUE))) == 1
    assert executions(driver.step(DUE + 100)) == []
    driver.processor.logic.throttle.board.set(Limit(RENDER, rate=1000, burst=100))
    assert executions(driver.step(DUE + 200)) == []  # earned at 1/s until this tick
    assert len(executions(driver.step(DUE + 300))) == 100  # 100 ms at 1,000/s: the burst
    driver.processor.logic.throttle.board.clear(RENDER)
    assert len(executions(driver.step(DUE + 320))) == 199
    assert held(driver, RENDER) == 0
    driver.close()


def test_an_owner_type_limit_holds_that_owner_only(tmp_path: Path) -> None:
    pair = LimitKey(owner="greedy", job_type="image.render")
    driver = make_driver(tmp_path, Limit(pair, rate=1, burst=1))
    load(driver, 10, owner="greedy")
    load(driver, 10, owner="modest")
    owners = [e["spec"]["owner"] for e in executions(driver.step(DUE))]
    assert sorted(owners) == ["greedy"] + ["modest"] * 10
    assert held(driver, pair) == 9
    driver.close()


def test_a_held_job_can_be_cancelled(driver: TimersDriver) -> None:
    ids = load(driver, 10)
    driver.step(DUE)
    waiting = [i for i in ids if i not in {e["job_id"] for e in executions(driver.outputs)}]
    assert kinds(driver.step(DUE + 1, cancelled(waiting[0], now_ms=DUE))) == ["CANCELLED"]
    fired = run_until(driver, DUE + 1000)
    assert waiting[0] not in {f["job_id"] for f in fired} and len(fired) == 4


def test_a_held_cron_run_fires_as_that_run_and_the_schedule_goes_on(tmp_path: Path) -> None:
    driver = make_driver(tmp_path, Limit(RENDER, rate=1 / 120, burst=1))
    cron = submitted(now_ms=T0, cron=cron_schedule("* * * * *"), job_type="image.render")
    blocker = submitted(now_ms=T0, run_at_ms=T0, job_type="image.render")
    driver.step(T0, blocker, cron)  # the blocker takes the only token
    minute = (T0 // 60_000 + 1) * 60_000
    assert executions(driver.step(minute)) == []
    fired = executions(driver.step(T0 + 120_000))  # 120 s later: the next token
    assert [(e["job_id"], e["scheduled_at_ms"]) for e in fired] == [(cron.data["job_id"], minute)]
    entry = TimerState(PartitionBatch(driver.store())).get(cron.data["job_id"])
    assert entry is not None and entry.held_by is None and entry.due_ms > T0 + 120_000
    driver.close()


def test_each_timer_partition_enforces_its_share(tmp_path: Path) -> None:
    driver = make_driver(tmp_path, Limit(RENDER, rate=60, burst=6), partitions=6)  # owns one
    load(driver, 100)
    fired = run_until(driver, DUE + 2000)
    assert 1 + 19 <= len(fired) <= 1 + 21  # a burst of 1, then 10/s for 2 s


def test_the_status_shows_the_throttled_time_of_the_firing(driver: TimersDriver) -> None:
    load(driver, 6)
    fired = run_until(driver, DUE + 200)
    event = next(f for f in fired if f["throttled_ms"])
    scheduled = typed("JobLifecycle", {"kind": "SCHEDULED", "job_id": event["job_id"],
                                       "at_ms": T0, "scheduled_at_ms": DUE})  # fmt: skip
    record = transition(None, scheduled).record
    after = transition(record, event).record
    assert after is not None and after.throttled_ms == event["throttled_ms"]
    assert after.to_status().throttled_ms == event["throttled_ms"]
