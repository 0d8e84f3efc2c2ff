"""The timers fire no attempt, first or retry, at or past the job's deadline: EXPIRED."""

from __future__ import annotations

from typing import Any

from jobstream._pipeline.model.deadlines import DEADLINE_EXCEEDED
from jobstream._pipeline.serde import Event
from tests.support.jobs import submitted
from tests.support.timers import T0, TimersDriver, executions, kinds


def _limited(run_at_ms: int, **limits: Any) -> Event:
    job = submitted(now_ms=T0, run_at_ms=run_at_ms)
    job.data["spec"].update(limits)
    return job


def _retry(job: Event, attempt: int, at_ms: int) -> Event:
    return Event("RetryScheduled", {
        "job_id": job.data["job_id"], "workflow_id": None, "attempt": attempt, "epoch": 0,
        "retry_at_ms": at_ms, "spec": job.data["spec"], "idempotency_key": None, "errors": [],
    })  # fmt: skip


def test_an_attempt_due_before_the_deadline_fires_with_its_limits(driver: TimersDriver) -> None:
    job = _limited(T0 + 1000, deadline_ms=T0 + 5000, queue_limit_ms=2000, timeout_ms=60_000)
    driver.step(T0, job)
    emits = driver.step(T0 + 1000)
    assert kinds(emits) == ["ExecutionRequested", "FIRED"]
    assert executions(emits)[0]["deadline_ms"] == T0 + 5000, "its timeout ends by the deadline"
    fired = emits[1].value.data
    assert (fired.deadline_ms, fired.queue_limit_ms) == (T0 + 5000, 2000)


def test_a_first_attempt_fired_at_the_deadline_expires_instead(driver: TimersDriver) -> None:
    job = _limited(T0 + 1000, deadline_ms=T0 + 3000)
    driver.step(T0, job)
    emits = driver.step(T0 + 3000)  # the timers were down from T0 + 1000 to the deadline
    assert kinds(emits) == ["EXPIRED"]
    expired = emits[0].value.data
    assert expired.error.error_type == DEADLINE_EXCEEDED
    assert "attempt 1 would start" in expired.detail
    assert driver.step(T0 + 60_000) == [], "the job ended"


def test_a_retry_due_past_the_deadline_expires_instead(driver: TimersDriver) -> None:
    job = _limited(T0, deadline_ms=T0 + 3000)
    assert kinds(driver.step(T0, job)) == ["SCHEDULED", "ExecutionRequested", "FIRED"]
    driver.step(T0 + 100, _retry(job, 2, T0 + 3000))
    emits = driver.step(T0 + 3000)
    assert kinds(emits) == ["EXPIRED"]
    assert emits[0].value.data.error.attempt == 2
