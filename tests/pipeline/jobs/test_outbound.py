"""What both clients raise when the broker refuses records, whichever library reported it."""

from __future__ import annotations

from aiokafka.errors import MessageSizeTooLargeError, TopicAuthorizationFailedError
from confluent_kafka import KafkaError

from jobstream._pipeline.errors import AuthorizationError
from jobstream._pipeline.jobs.outbound import Failure, SubmissionError, refusal


def test_a_missing_acl_is_an_authorization_error_naming_the_topic_and_principal() -> None:
    # aiokafka's errno and librdkafka's code are the same Kafka number.
    assert TopicAuthorizationFailedError.errno == KafkaError.TOPIC_AUTHORIZATION_FAILED
    failures = [Failure("01A", None, "no answer"),
                Failure("01B", TopicAuthorizationFailedError.errno, "denied")]  # fmt: skip
    error = refusal("p.jobs.intake", failures, 2, principal="svc")
    assert isinstance(error, AuthorizationError)
    assert (error.resource, error.name, error.operation) == ("topic", "p.jobs.intake", "WRITE")
    assert "User:svc" in str(error)


def test_a_record_too_large_is_not_retryable_and_every_job_is_named() -> None:
    failures = [Failure(f"01J{n}", MessageSizeTooLargeError.errno, "too large") for n in range(7)]
    error = refusal("jobs.intake", failures, 10, principal=None)
    assert isinstance(error, SubmissionError) and not error.retryable
    assert error.job_ids == [f"01J{n}" for n in range(7)]
    assert str(error) == ("jobs.intake: 7 of 10 records not acknowledged: too large "
                          "(job ids 01J0, 01J1, 01J2, 01J3, 01J4 and 2 more)")  # fmt: skip


def test_a_timeout_is_retryable() -> None:
    error = refusal("jobs.intake", [Failure("01A", KafkaError._MSG_TIMED_OUT, "timed out")], 1,
                    principal=None)  # fmt: skip
    assert isinstance(error, SubmissionError) and error.retryable
