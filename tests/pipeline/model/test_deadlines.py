"""The rules of a job's deadline and queue limit (pipeline/model/deadlines.py)."""

from __future__ import annotations

from jobstream._pipeline.model.deadlines import (
    DEADLINE_EXCEEDED,
    QUEUE_LIMIT_EXCEEDED,
    attempt_deadline_ms,
    attempt_refusal,
    capped_timeout_s,
    claim_refusal,
    expiry_reason,
    queued_expiry_ms,
    queued_refusal,
    retry_refusal,
)
from jobstream._pipeline.model.records import ErrorInfo, ExecutionRequested, JobSpec, evolve

T0 = 1_798_000_000_000  # 2026-12-23T04:26:40Z
SPEC = JobSpec(job_type="data.process", owner="tests", deadline_ms=T0 + 10_000)
FREE = JobSpec(job_type="data.process", owner="tests")
FAILED = ErrorInfo(attempt=1, error_type="IOError", message="disk full", at_ms=T0)


def test_an_attempt_may_start_before_the_deadline_and_not_at_it() -> None:
    assert attempt_refusal(SPEC, attempt=1, due_ms=T0 + 9_999, now_ms=T0) is None
    late = attempt_refusal(SPEC, attempt=2, due_ms=T0 + 10_000, now_ms=T0)
    assert late is not None and late.error_type == DEADLINE_EXCEEDED
    assert late.message == ("attempt 2 would start at 2026-12-23T04:26:50Z, at or past the "
                            "job's deadline 2026-12-23T04:26:50Z")  # fmt: skip
    fired_late = attempt_refusal(SPEC, attempt=1, due_ms=T0, now_ms=T0 + 10_001)
    assert fired_late is not None, "it would start when fired, past the deadline"
    assert attempt_refusal(FREE, attempt=9, due_ms=T0 + 10**12, now_ms=T0) is None


def test_a_retry_past_the_deadline_is_refused_keeping_the_failure() -> None:
    assert retry_refusal(SPEC, attempt=2, retry_at_ms=T0 + 9_999, last_error=FAILED) is None
    refused = retry_refusal(SPEC, attempt=2, retry_at_ms=T0 + 10_000, last_error=FAILED)
    assert refused is not None and refused.error_type == DEADLINE_EXCEEDED
    assert refused.message.startswith("attempt 1 failed (IOError: disk full); its retry")
    error = refused.error(attempt=1, at_ms=T0)
    assert (error.retryable, error.message) == (False, refused.message)


def test_an_attempt_ends_by_its_timeout_or_the_deadline_whichever_is_first() -> None:
    assert attempt_deadline_ms(SPEC, start_ms=T0, timeout_ms=4_000) == T0 + 4_000
    assert attempt_deadline_ms(SPEC, start_ms=T0, timeout_ms=60_000) == T0 + 10_000
    assert attempt_deadline_ms(SPEC, start_ms=T0, timeout_ms=None) == T0 + 10_000
    assert attempt_deadline_ms(FREE, start_ms=T0, timeout_ms=None) is None
    assert capped_timeout_s(SPEC, start_ms=T0 + 7_500, timeout_s=60) == 2.5
    assert capped_timeout_s(SPEC, start_ms=T0, timeout_s=1.5) == 1.5
    assert capped_timeout_s(FREE, start_ms=T0, timeout_s=60) == 60
    assert capped_timeout_s(SPEC, start_ms=T0 + 20_000, timeout_s=60) == 0.001


def test_a_queued_attempt_expires_at_its_limit_from_its_due_instant_or_the_deadline() -> None:
    assert queued_expiry_ms(None, 5_000, queued_at_ms=T0, due_ms=T0 - 1) == T0 + 5_000
    assert queued_expiry_ms(None, 5_000, queued_at_ms=T0, due_ms=T0 + 2_000) == T0 + 7_000
    assert queued_expiry_ms(T0 + 3_000, 5_000, queued_at_ms=T0, due_ms=T0) == T0 + 3_000
    assert queued_expiry_ms(T0 + 3_000, None, queued_at_ms=T0, due_ms=None) == T0 + 3_000
    assert queued_expiry_ms(None, None, queued_at_ms=T0, due_ms=T0) is None


def test_a_queued_expiry_names_the_type_and_pool_no_worker_served() -> None:
    limit = queued_refusal(T0 + 60_000, 2_500, job_type="image.render", pool="gpu", attempt=1,
                           now_ms=T0 + 2_500)  # fmt: skip
    assert limit.error_type == QUEUE_LIMIT_EXCEEDED
    assert limit.message == ("no worker of type image.render (pool gpu) took attempt 1 within "
                             "its queue limit of 2.5 s")  # fmt: skip
    deadline = queued_refusal(T0 + 60_000, 90_000, job_type="image.render", pool=None,
                              attempt=3, now_ms=T0 + 60_000)  # fmt: skip
    assert deadline.error_type == DEADLINE_EXCEEDED
    assert "no worker of type image.render (any pool) started attempt 3" in deadline.message
    assert expiry_reason(limit.error(attempt=1, at_ms=T0)) == "queue_limit"
    assert expiry_reason(deadline.error(attempt=3, at_ms=T0)) == "deadline"
    assert expiry_reason(None) == expiry_reason(FAILED) == "other"


def test_a_worker_refuses_what_the_status_processor_expires() -> None:
    run = ExecutionRequested(job_id="j", execution_id="e", scheduled_at_ms=T0, fired_at_ms=T0,
                             spec=evolve(SPEC, queue_limit_ms=5_000))  # fmt: skip
    assert claim_refusal(run, T0 + 4_999) is None
    assert claim_refusal(run, T0 + 5_000) == "past its queue limit"
    assert claim_refusal(evolve(run, spec=evolve(SPEC, queue_limit_ms=60_000)),
                         T0 + 10_000) == "past the job's deadline"  # fmt: skip
    assert claim_refusal(evolve(run, spec=FREE), T0 + 10**9) is None
