"""Retry policies, per-type defaults, and the retry-or-dead-letter decision table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import ConfigurationError, ValidationError
from jobstream._pipeline.model.backoff import compute_backoff
from jobstream._pipeline.model.records import ErrorInfo, JobSpec, RetryPolicyRecord, plain, typed
from jobstream._pipeline.model.retry import (
    EXHAUSTED,
    NON_RETRYABLE,
    DeadLetter,
    Retry,
    RetryDefaults,
    RetryPolicy,
    decide,
)
from tests.pipeline.retry.events import error_info, execution, failure, retry_policy

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "io.jobstream.RetryPolicy.avsc"
T0 = 1_798_000_000_000
NO_JITTER = RetryPolicy(jitter=0.0)


def test_defaults_are_the_schema_s_defaults() -> None:
    schema = json.loads(SCHEMA.read_text())
    defaults = {f["name"]: f["default"] for f in schema["fields"]}
    assert plain(RetryPolicy().to_avro()) == defaults
    assert RetryPolicy().to_avro() == RetryPolicyRecord()


def test_from_avro_round_trip_and_broken_records() -> None:
    record = typed("RetryPolicy", retry_policy(max_attempts=7, non_retryable_errors=["BadInput"]))
    policy = RetryPolicy.from_avro(record)
    assert policy.non_retryable_errors == ("BadInput",)
    assert policy.to_avro() == record
    with pytest.raises(ValidationError) as caught:
        RetryPolicy.from_avro(RetryPolicyRecord(max_attempts=0))
    assert caught.value.field == "retry.max_attempts"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_attempts": 0}, "retry.max_attempts"),
        ({"initial_backoff_ms": 0}, "retry.initial_backoff_ms"),
        ({"backoff_coefficient": 0.5}, "retry.backoff_coefficient"),
        ({"backoff_coefficient": float("nan")}, "retry.backoff_coefficient"),
        ({"max_backoff_ms": 500}, "retry.max_backoff_ms"),
        ({"jitter": 1.5}, "retry.jitter"),
        ({"max_attempts": "3"}, "retry.max_attempts"),
        ({"max_attempts": True}, "retry.max_attempts"),
    ],
)
def test_invalid_policies_name_the_field(changes: dict, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RetryPolicy(**changes)
    assert caught.value.field == field


def test_per_type_defaults_override_the_global_one_field_by_field() -> None:
    defaults = RetryDefaults.from_overrides(
        {"image.render": {"max_attempts": 5}, "*": {"jitter": 0.2}}
    )
    assert defaults.for_type("image.render") == RetryPolicy(max_attempts=5, jitter=0.2)
    assert defaults.for_type("data.process") == RetryPolicy(jitter=0.2)
    own = RetryPolicyRecord(max_attempts=9)
    spec = JobSpec(job_type="image.render", owner="tests", retry=own)
    assert defaults.policy_for(spec).max_attempts == 9
    assert defaults.policy_for(JobSpec(job_type="image.render", owner="tests")).max_attempts == 5


def load_retry_defaults() -> RetryDefaults:
    return RetryDefaults.from_overrides(load_settings().retry_defaults)


def test_defaults_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBSTREAM_RETRY_DEFAULTS", raising=False)
    assert load_retry_defaults() == RetryDefaults()
    monkeypatch.setenv("JOBSTREAM_RETRY_DEFAULTS", '{"image.render": {"max_attempts": 5}}')
    assert load_retry_defaults().for_type("image.render").max_attempts == 5
    for bad in ('{"image.render": {"max_attempts": 0}}', '{"x": {"nope": 1}}', "{oops", "[1]"):
        monkeypatch.setenv("JOBSTREAM_RETRY_DEFAULTS", bad)
        with pytest.raises(ConfigurationError, match="JOBSTREAM_RETRY_DEFAULTS"):
            load_retry_defaults()


# -- the decision table ------------------------------------------------------------------


def test_a_retryable_failure_under_max_attempts_is_retried_after_its_backoff() -> None:
    earlier = error_info(1)
    run = execution(attempt=2, errors=[earlier])
    error = error_info(2)
    decision = decide(failure("FAILED", run, at_ms=T0, error=error).data, NO_JITTER, T0)
    assert decision == Retry(attempt=3, retry_at_ms=T0 + 2000, delay_ms=2000,
                             errors=[ErrorInfo(**earlier), ErrorInfo(**error)])  # fmt: skip


def test_the_delay_is_jittered_from_the_execution_id() -> None:
    run = execution(attempt=1)
    event = failure("FAILED", run, at_ms=T0, error=error_info(1)).data
    decision = decide(event, RetryPolicy(jitter=0.5), T0)
    expected = compute_backoff(1, initial_ms=1000, coefficient=2.0, max_ms=300_000, jitter=0.5,
                               seed=run["execution_id"])  # fmt: skip
    assert isinstance(decision, Retry)
    assert decision.retry_at_ms == T0 + expected
    assert decision == decide(event, RetryPolicy(jitter=0.5), T0)


def test_the_last_attempt_s_failure_exhausts_the_job() -> None:
    errors = [error_info(1), error_info(2)]
    run = execution(attempt=3, errors=errors)
    decision = decide(failure("FAILED", run, error=error_info(3)).data, NO_JITTER, T0)
    assert isinstance(decision, DeadLetter)
    assert (decision.reason, decision.attempts) == (EXHAUSTED, 3)
    assert [e.attempt for e in decision.errors] == [1, 2, 3]
    once = decide(failure("FAILED", execution(), error=error_info(1)).data,
                  RetryPolicy(max_attempts=1), T0)  # fmt: skip
    assert isinstance(once, DeadLetter) and once.reason == EXHAUSTED


def test_an_error_marked_not_retryable_goes_straight_to_the_dead_letter_topic() -> None:
    error = error_info(1, "BadInput", retryable=False)
    decision = decide(failure("FAILED", execution(), error=error).data, NO_JITTER, T0)
    assert decision == DeadLetter(NON_RETRYABLE, 1, [ErrorInfo(**error)])


@pytest.mark.parametrize("error_type", ["BadInput", "app.errors.BadInput"])
def test_an_error_type_the_policy_lists_goes_straight_to_the_dead_letter_topic(
    error_type: str,
) -> None:
    policy = RetryPolicy(non_retryable_errors=("BadInput",), max_attempts=10)
    error = error_info(1, error_type)
    decision = decide(failure("FAILED", execution(), error=error).data, policy, T0)
    assert isinstance(decision, DeadLetter) and decision.reason == NON_RETRYABLE
    other = decide(failure("FAILED", execution(), error=error_info(1, "BadInputs")).data,
                   policy, T0)  # fmt: skip
    assert isinstance(other, Retry)


def test_non_retryable_is_the_reason_even_on_the_last_attempt() -> None:
    run = execution(attempt=3, errors=[error_info(1), error_info(2)])
    error = error_info(3, "BadInput", retryable=False)
    decision = decide(failure("FAILED", run, error=error).data, NO_JITTER, T0)
    assert isinstance(decision, DeadLetter) and decision.reason == NON_RETRYABLE


def test_a_lost_run_without_an_error_is_retried_as_a_lease_expiry() -> None:
    run = execution(attempt=1)
    decision = decide(failure("LOST", run, at_ms=T0).data, NO_JITTER, T0)
    assert isinstance(decision, Retry)
    assert decision.attempt == 2 and decision.retry_at_ms == T0 + 1000
    (error,) = decision.errors
    assert error.error_type == "LeaseExpired" and error.retryable is True
    assert (error.attempt, error.at_ms, error.worker_id) == (1, T0, "worker-1")


def test_a_timeout_without_an_error_is_a_timeout() -> None:
    decision = decide(failure("TIMED_OUT", execution(), at_ms=T0).data, NO_JITTER, T0)
    assert isinstance(decision, Retry) and decision.errors[0].error_type == "Timeout"


def test_a_failure_without_its_execution_cannot_be_decided() -> None:
    with pytest.raises(ValueError):
        decide(failure("FAILED", None, error=error_info(1)).data, NO_JITTER, T0)
