"""The broker's authorization codes as errors naming the resource and the operation."""

from __future__ import annotations

from confluent_kafka import KafkaError

from jobstream._pipeline.errors import AuthorizationError
from jobstream._pipeline.kafka.denied import denied


def named(code: int, **names: str) -> AuthorizationError:
    refused = denied(KafkaError(code), principal="jobstream-client", **names)
    assert refused is not None
    return refused


def test_each_code_names_its_resource_and_operation() -> None:
    topic = named(KafkaError.TOPIC_AUTHORIZATION_FAILED, topic="jobs.status")
    assert (topic.resource, topic.name, topic.operation) == ("topic", "jobs.status", "WRITE")
    assert str(topic).startswith("not authorized: principal User:jobstream-client may not WRITE "
                                 "topic 'jobs.status' (TOPIC_AUTHORIZATION_FAILED)")  # fmt: skip
    group = named(KafkaError.GROUP_AUTHORIZATION_FAILED, group="jobstream.timers")
    assert (group.resource, group.name, group.operation) == ("group", "jobstream.timers", "READ")
    txn = named(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactional_id="t.0")
    assert (txn.resource, txn.name, txn.operation) == ("transactional id", "t.0", "WRITE")
    assert not txn.retryable


def test_an_idempotent_producer_refused_at_the_cluster_is_told_to_get_write_on_its_topic() -> None:
    refused = named(KafkaError.CLUSTER_AUTHORIZATION_FAILED, topic="jobs.intake")
    assert (refused.resource, refused.name, refused.operation) == ("topic", "jobs.intake", "WRITE")


def test_other_errors_are_no_refusal() -> None:
    assert denied(KafkaError(KafkaError._TRANSPORT), topic="jobs.intake") is None
    assert denied(None) is None
