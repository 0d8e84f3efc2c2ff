"""A QUEUED attempt's expiry at the status processor: its queue limit, or the job's
deadline, on real RocksDB files and a clock the test controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.model.deadlines import DEADLINE_EXCEEDED, QUEUE_LIMIT_EXCEEDED
from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.serde import JobState
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.status import JOB, StatusDriver, lifecycles, status_driver, statuses

LIMIT = 5_000


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path)
    yield driver
    driver.close()


def _limited(run: dict[str, Any], **limits: Any) -> JobLifecycle:
    """The timers' FIRED of ``run``, telling its pool and limits as they write it."""
    return ev.lifecycle("FIRED", run["job_id"], at_ms=run["epoch"],
                        scheduled_at_ms=run["scheduled_at_ms"], attempt=run["attempt"],
                        epoch=run["epoch"], execution_id=run["execution_id"],
                        **limits)  # fmt: skip


def test_a_queued_attempt_no_worker_started_expires_at_its_queue_limit(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, ev.scheduled(JOB), _limited(run, queue_limit_ms=LIMIT, pool="gpu"))
    assert driver.step(T0 + LIMIT - 1) == []
    emitted = lifecycles(driver.step(T0 + LIMIT))
    assert [(e.kind, e.execution_id, e.epoch) for e in emitted] == [
        ("EXPIRED", run["execution_id"], T0)]  # fmt: skip
    error = emitted[0].error
    assert error is not None and error.error_type == QUEUE_LIMIT_EXCEEDED
    assert "no worker of type data.process (pool gpu)" in error.message
    assert "5 s" in error.message
    assert driver.step(T0 + LIMIT + 1) == [], "expired once"
    # Read back, it ends the job, with the reason as its last error.
    status = statuses(driver.step(T0 + LIMIT + 2, emitted[0]))[-1]
    assert status.state is JobState.EXPIRED
    assert status.last_error is not None and status.last_error.message == error.message
    assert (status.pool, status.queue_limit_ms) == ("gpu", LIMIT)


def test_a_start_in_time_drops_the_expiry(driver: StatusDriver) -> None:
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, ev.scheduled(JOB), _limited(run, queue_limit_ms=LIMIT))
    driver.step(T0 + LIMIT - 1, ev.outcome("STARTED", run, at_ms=T0 + LIMIT - 1))
    record = driver.record()
    assert record is not None and record.queue_expiry_ms is None
    assert [e.kind for e in lifecycles(driver.step(T0 + 10 * LIMIT))] == ["LOST"]


def test_a_start_after_the_expiry_is_a_duplicate_that_changes_nothing(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, ev.scheduled(JOB), _limited(run, queue_limit_ms=LIMIT))
    expired = lifecycles(driver.step(T0 + LIMIT))
    late = driver.step(T0 + LIMIT + 1, ev.outcome("STARTED", run, at_ms=T0 + LIMIT + 1),
                       *expired)  # fmt: skip
    assert [e.kind for e in lifecycles(late)] == ["DUPLICATE"]
    assert [s.state for s in statuses(late)] == [JobState.EXPIRED]


def test_a_queued_attempt_expires_at_the_deadline_before_its_queue_limit(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=T0)
    deadline = T0 + 2_000
    driver.step(T0, ev.scheduled(JOB), _limited(run, queue_limit_ms=LIMIT, deadline_ms=deadline))
    assert driver.step(deadline - 1) == []
    [event] = lifecycles(driver.step(deadline))
    assert event.kind == "EXPIRED"
    assert event.error is not None and event.error.error_type == DEADLINE_EXCEEDED
    assert "any pool" in event.error.message


def test_a_run_fired_ahead_counts_its_limit_from_its_due_instant(driver: StatusDriver) -> None:
    run = {**ev.execution(JOB, epoch=T0), "scheduled_at_ms": T0 + 3_000}
    driver.step(T0, ev.scheduled(JOB), _limited(run, queue_limit_ms=LIMIT))
    assert driver.step(T0 + 3_000 + LIMIT - 1) == []
    assert [e.kind for e in lifecycles(driver.step(T0 + 3_000 + LIMIT))] == ["EXPIRED"]


def test_a_job_without_limits_stays_queued(driver: StatusDriver) -> None:
    run = ev.execution(JOB, epoch=T0)
    driver.step(T0, ev.scheduled(JOB), ev.fired(run))
    assert driver.step(T0 + 365 * 86_400_000) == []
    record = driver.record()
    assert record is not None and record.state is JobState.QUEUED
