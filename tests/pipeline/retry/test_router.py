"""The router's step, broker-free: which records a failure turns into, and that they encode."""

from __future__ import annotations

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import evolve, plain, typed
from jobstream._pipeline.model.retry import RetryDefaults, RetryPolicy
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.retry.router import RetryRouter
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from tests.pipeline.retry.events import error_info, execution, failure, retry_policy, succeeded
from tests.support.pipeline import DESERIALIZE, SERIALIZE

T0 = 1_798_000_000_000
NOW = T0 + 50


@pytest.fixture
def router() -> RetryRouter:
    return RetryRouter(Topics(Settings(topic_prefix="t.")),
                       RetryDefaults(default=RetryPolicy(jitter=0.0)))  # fmt: skip


def encoded(event: Event) -> Event:
    """What a consumer reads back: proves the record fits its schema."""
    return DESERIALIZE(SERIALIZE(event))


def test_a_retry_is_a_retry_scheduled_and_a_lifecycle_step_under_the_partition_key(
    router: RetryRouter,
) -> None:
    run = execution(attempt=1, idempotency_key="k-1", fired_at_ms=T0 - 500)
    error = error_info(1, at_ms=T0)
    retry, step = router.route(failure("FAILED", run, at_ms=T0, error=error), NOW)
    assert (retry.topic, step.topic) == ("t.jobs.retry", "t.jobs.events")
    assert retry.key == step.key == partition_key(run["job_id"], None)
    assert retry.urgent and step.urgent  # committed with their batch, not after the interval
    scheduled = encoded(retry.value).data
    assert plain(scheduled) == {
        "job_id": run["job_id"], "workflow_id": None, "attempt": 2, "epoch": run["epoch"],
        "retry_at_ms": T0 + 1000, "spec": run["spec"], "errors": [error],
        "idempotency_key": "k-1", "resume_from": None,
    }  # fmt: skip
    lifecycle = encoded(step.value).data
    assert lifecycle.kind == "RETRY_SCHEDULED"
    assert (lifecycle.at_ms, lifecycle.scheduled_at_ms, lifecycle.attempt) == (
        NOW, T0 + 1000, 2
    )  # fmt: skip
    assert lifecycle.execution_id == run["execution_id"]
    assert router.stats.retried == 1


def test_a_dead_letter_goes_to_the_type_s_topic_with_every_error(router: RetryRouter) -> None:
    errors = [error_info(1), error_info(2)]
    run = execution(attempt=3, errors=errors, job_type="image.render", idempotency_key="k-2")
    last = error_info(3, "Timeout")
    dead, step = router.route(failure("TIMED_OUT", run, error=last), NOW)
    assert dead.topic == "t.jobs.dlq.image.render"
    assert dead.urgent and step.urgent
    record = encoded(dead.value).data
    assert [plain(e) for e in record.errors] == [*errors, last]
    assert (record.reason, record.attempts, record.dead_lettered_at_ms) == (
        "exhausted", 3, NOW
    )  # fmt: skip
    assert (record.idempotency_key, plain(record.spec)) == ("k-2", run["spec"])
    lifecycle = encoded(step.value).data
    assert (lifecycle.kind, lifecycle.detail, plain(lifecycle.error)) == (
        "DEAD_LETTERED", "exhausted", last
    )  # fmt: skip
    assert router.stats.dead_lettered == 1


def test_the_job_s_own_policy_wins_and_a_broken_one_falls_back_to_the_default(
    router: RetryRouter,
) -> None:
    own = execution(retry=retry_policy(max_attempts=1))
    (dead, _) = router.route(failure("FAILED", own, error=error_info(1)), NOW)
    assert dead.value.name == "DeadLettered"
    broken = execution(retry=retry_policy(max_backoff_ms=10, initial_backoff_ms=100))
    (retry, _) = router.route(failure("FAILED", broken, error=error_info(1), at_ms=T0), NOW)
    assert retry.value.data.retry_at_ms == T0 + 1000
    assert router.stats.bad_policies == 1


def test_other_events_are_ignored_and_failures_without_an_execution_counted(
    router: RetryRouter,
) -> None:
    assert router.route(succeeded(execution()), NOW) == []
    stopped = failure("CANCELLED", execution())  # a worker's: it carries the execution
    assert router.route(stopped, NOW) == [], "a run stopped by a cancel is never retried"
    assert router.route(failure("FAILED", None, error=error_info(1)), NOW) == []
    assert router.route(Event("JobCancelled", {"job_id": "x"}), NOW) == []
    assert router.stats.unroutable == 1
    assert router.stats.retried == router.stats.dead_lettered == 0


def test_a_retry_that_would_start_at_or_past_the_deadline_expires_the_job(
    router: RetryRouter,
) -> None:
    run = execution(attempt=1)
    run["spec"]["deadline_ms"] = T0 + 1000  # the retry's backoff is 1000 ms
    (step,) = router.route(failure("FAILED", run, at_ms=T0, error=error_info(1, at_ms=T0)), NOW)
    assert step.topic == "t.jobs.events" and step.urgent, "no RetryScheduled, no dead letter"
    lifecycle = encoded(step.value).data
    assert lifecycle.kind == "EXPIRED"
    assert lifecycle.error.error_type == "DeadlineExceeded"
    assert "attempt 1 failed (ConnectionError: ConnectionError on 1)" in lifecycle.error.message
    assert "retry (attempt 2) would start" in lifecycle.detail
    assert (router.stats.expired, router.stats.retried) == (1, 0)
    run["spec"]["deadline_ms"] = T0 + 1001
    retry, _ = router.route(failure("FAILED", run, at_ms=T0, error=error_info(1, at_ms=T0)), NOW)
    assert retry.topic == "t.jobs.retry", "a retry before the deadline is scheduled"


def test_the_latest_checkpoint_goes_on_with_the_retry_and_the_dead_letter(
    router: RetryRouter,
) -> None:
    saved = {"state": b'{"done": 50}', "json": True, "attempt": 1, "execution_id": "x1",
             "at_ms": T0}  # fmt: skip
    run = execution(attempt=1, fired_at_ms=T0 - 500)
    lost = failure("LOST", run, at_ms=T0, error=error_info(1, at_ms=T0))
    lost = Event(lost.name, evolve(lost.data, checkpoint=typed("Checkpoint", saved)))
    retry, _ = router.route(lost, NOW)
    assert plain(encoded(retry.value).data)["resume_from"] == saved

    # The next attempt saves nothing before it fails: the one it resumed from goes on.
    again = {**execution(job_id=run["job_id"], attempt=2, fired_at_ms=T0 + 1000),
             "resume_from": saved}  # fmt: skip
    retry, _ = router.route(failure("FAILED", again, at_ms=T0 + 2000,
                                    error=error_info(2, at_ms=T0 + 2000)), NOW)  # fmt: skip
    assert plain(encoded(retry.value).data)["resume_from"] == saved
    last = {**execution(job_id=run["job_id"], attempt=3, fired_at_ms=T0 + 5000),
            "resume_from": saved}  # fmt: skip
    dead, _ = router.route(failure("FAILED", last, at_ms=T0 + 6000,
                                   error=error_info(3, at_ms=T0 + 6000)), NOW)  # fmt: skip
    assert dead.topic == "t.jobs.dlq.data.process"
    assert plain(encoded(dead.value).data)["resume_from"] == saved, "for a redrive"
    fresh = execution(attempt=1)
    retry, _ = router.route(failure("FAILED", fresh, error=error_info(1)), NOW)
    assert encoded(retry.value).data.resume_from is None, "none saved: none handed on"
