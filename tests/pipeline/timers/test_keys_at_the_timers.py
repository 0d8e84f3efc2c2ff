"""Keys where jobs fire: a rate key holds its jobs in its own queue and fires them at its
rate on their instant, throttled time apart from lateness; a concurrency key routes every
run of the key to one execution partition (within a limited type's slots)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.concurrency import keyed_partition
from jobstream._pipeline.config import Settings
from jobstream._pipeline.limits.keyed import RateKey
from jobstream._pipeline.model.keys import scoped
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.state import TimerState
from tests.support.jobs import submitted
from tests.support.timers import ALONE, DUE, T0, TimersDriver, driving, executions

TICK = 20
SIX = Settings(fire_lead=2000, exec_partitions=6, concurrency_limits={"report.generate": 2})


def with_keys(event: Event, **keys: Any) -> Event:
    event.data["spec"]["job_keys"] = {"concurrency_limit": 1, **keys}
    return event


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path, settings=ALONE.model_copy(update={"fire_lead": 2000}))


def test_a_rate_key_fires_at_its_rate_on_the_instant_and_reports_its_wait(
        driver: TimersDriver) -> None:  # fmt: skip
    jobs = [with_keys(submitted(now_ms=T0, run_at_ms=DUE, job_type="image.render"),
                      rate_key="api", rate="5/s") for _ in range(10)]  # fmt: skip
    other = submitted(now_ms=T0, run_at_ms=DUE, job_type="image.render")
    early = driver.step(T0, *jobs, other)
    assert [e["job_id"] for e in executions(early)] == [other.data["job_id"]], "fired ahead"
    queue = RateKey("tests", "api", 5.0).id
    fired, held = [], []
    for now in range(DUE, DUE + 2000, TICK):
        events = [e.value.data for e in driver.step(now) if e.value.name == "JobLifecycle"]
        fired += [e for e in events if e["kind"] == "FIRED"]
        held += [e for e in events if e["kind"] == "HELD"]
        if now == DUE:
            assert sum(1 for _ in TimerState(PartitionBatch(driver.store())).held_by(queue)) == 7
    assert len(held) == 7, "one HELD for each job held, when first held"
    assert {(e["held_by"], e["scheduled_at_ms"]) for e in held} == {("rate:api", DUE)}
    assert sorted(f["job_id"] for f in fired) == sorted(j.data["job_id"] for j in jobs)
    times = sorted(f["at_ms"] for f in fired)
    for k, at in enumerate(times):
        assert at >= DUE + max(0, k + 1 - 3) * 200, "the k-th after (k - burst) / rate"
    assert times[-1] <= DUE + 1400 + TICK
    throttled = [f for f in fired if f["throttled_ms"] is not None]
    assert len(throttled) == 7
    assert all(0 < f["throttled_ms"] <= f["lateness_ms"] for f in throttled)


def test_each_owner_has_its_own_rate_key(driver: TimersDriver) -> None:
    jobs = [with_keys(submitted(now_ms=T0, run_at_ms=DUE, owner=owner), rate_key="api",
                      rate="1/min") for owner in ("acme", "bolt") for _ in range(2)]  # fmt: skip
    driver.step(T0, *jobs)
    assert len(executions(driver.step(DUE))) == 2


@pytest.fixture
def six(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path, settings=SIX)


def test_a_concurrency_key_routes_every_run_of_the_key_to_one_partition(six: TimersDriver) -> None:
    jobs = [with_keys(submitted(now_ms=T0, run_at_ms=T0, job_type=job_type, priority=tier),
                      concurrency_key=key, concurrency_limit=2)
            for key in ("customer-1", "customer-2", "customer-3")
            for job_type in ("image.render", "report.generate")
            for tier in ("HIGH", "LOW")]  # fmt: skip
    fired = [o for o in six.step(T0, *jobs) if o.value.name == "ExecutionRequested"]
    assert len(fired) == 12
    for out in fired:
        spec = out.value.data["spec"]
        key = scoped("tests", spec["job_keys"]["concurrency_key"])
        if spec["job_type"] == "report.generate":  # limited to 2: within its slots' indices
            assert out.partition == keyed_partition(key, 6, 2) in (0, 1)
        else:
            assert out.partition == keyed_partition(key, 6)


def test_routing_by_key_spreads_keys_and_stays_put() -> None:
    keys = [scoped("acme", f"customer-{i}") for i in range(600)]
    routed = [keyed_partition(key, 6) for key in keys]
    assert min(routed.count(p) for p in range(6)) > 60
    assert routed == [keyed_partition(key, 6) for key in keys]
    assert {keyed_partition(key, 6, 3) for key in keys} == {0, 1, 2}
    assert {keyed_partition(key, 6, 9) for key in keys} == set(range(6))
    assert keyed_partition(scoped("acme", "k"), 6) == keyed_partition(scoped("acme", "k"), 6, 6)
