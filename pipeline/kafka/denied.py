"""The broker's authorization failures as errors that name what was refused.

librdkafka reports a missing ACL as a code (TOPIC_AUTHORIZATION_FAILED, ...) whose text
says neither the topic nor the operation; the caller knows both, and passes them here to
get an :class:`AuthorizationError` a person can act on. Retrying cannot help until
someone grants the ACL, so such an error ends what it interrupts.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from jobstream._pipeline.errors import AuthorizationError

AUTHORIZATION_CODES = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
})  # fmt: skip


def is_denied(error: KafkaError) -> bool:
    return error.code() in AUTHORIZATION_CODES


def denied(error: KafkaError | None, *, topic: str | None = None, group: str | None = None,
           transactional_id: str | None = None, operation: str = "WRITE",
           principal: str | None = None) -> AuthorizationError | None:  # fmt: skip
    """The AuthorizationError ``error`` stands for, or None when it is no refusal.

    ``operation`` is what was asked of the topic (WRITE to produce, READ to consume). An
    idempotent producer that may write no topic at all is refused at the cluster
    (CLUSTER_AUTHORIZATION_FAILED, for IDEMPOTENT_WRITE); the grant that fixes it is WRITE
    on the topic, so that is what the error names."""
    if error is None:
        return None
    code = error.code()
    name = error.name()
    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return AuthorizationError("group", group or "?", "READ", code=name, principal=principal)
    if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return AuthorizationError("transactional id", transactional_id or "?", "WRITE",
                                  code=name, principal=principal)  # fmt: skip
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED or (
        code == KafkaError.CLUSTER_AUTHORIZATION_FAILED and topic is not None
    ):
        return AuthorizationError("topic", topic or "?", operation, code=name,
                                  principal=principal)  # fmt: skip
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
        return AuthorizationError("cluster", "kafka-cluster", operation, code=name,
                                  principal=principal)  # fmt: skip
    return None
