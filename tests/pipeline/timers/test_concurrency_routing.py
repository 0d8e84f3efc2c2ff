"""The timers put a limited type's executions on the partitions that carry its slots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.config import Settings
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.serde import Event
from tests.support.jobs import submitted
from tests.support.timers import T0, TimersDriver, driving

SETTINGS = Settings(fire_lead=0, exec_partitions=6, concurrency_limits={"report.generate": 2})
LIMITS = ConcurrencyLimits.of(SETTINGS)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path, settings=SETTINGS)


def test_a_limited_type_fires_only_to_its_first_partitions(driver: TimersDriver) -> None:
    jobs = [submitted(now_ms=T0, run_at_ms=T0 + 1000, job_type="report.generate", priority=tier)
            for tier in ("HIGH", "NORMAL", "LOW") * 20]  # fmt: skip
    driver.step(T0, *jobs)
    fired = [out for out in driver.step(T0 + 1000) if out.value.name == "ExecutionRequested"]
    assert len(fired) == 60
    assert {out.partition for out in fired} == {0, 1}
    for out in fired:  # by the key, so every run of a job meets in one partition
        data = out.value.data
        assert out.partition == LIMITS.partition_for(
            "report.generate", partition_key(data["job_id"], data["workflow_id"])
        )


def test_a_retry_of_a_limited_type_goes_where_its_first_run_went(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0, job_type="report.generate")
    first = [o for o in driver.step(T0, job) if o.value.name == "ExecutionRequested"]
    retry = Event("RetryScheduled", {
        "job_id": job.data["job_id"], "workflow_id": None, "attempt": 2, "epoch": T0,
        "retry_at_ms": T0 + 500, "spec": job.data["spec"], "idempotency_key": None, "errors": [],
    })  # fmt: skip
    driver.step(T0 + 100, retry)
    again = [o for o in driver.step(T0 + 500) if o.value.name == "ExecutionRequested"]
    assert again and again[0].partition == first[0].partition in (0, 1)


def test_a_type_with_no_limit_is_left_to_the_producer(driver: TimersDriver) -> None:
    emits = driver.step(T0, submitted(now_ms=T0, run_at_ms=T0, job_type="image.render"))
    fired = [out for out in emits if out.value.name == "ExecutionRequested"]
    assert [out.partition for out in fired] == [None]
