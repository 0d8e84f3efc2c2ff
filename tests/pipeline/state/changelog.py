"""Changelog records committed to the real broker, and what restore tests check with."""

from __future__ import annotations

import pytest

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.kafka.identity import TopicIdentity, topic_identity
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.topics import Topics

PARTITION = 1


def write_changelog(topics: Topics, records: list[tuple[bytes, bytes]],
                    partition: int = PARTITION) -> int:  # fmt: skip
    """Commit ``records`` to one changelog partition; the offset of the last one."""
    writer = f"{topics.timers_changelog}-writer"
    producer = clients.producer(topics.settings, transactional_id=writer)
    producer.init_transactions(30)
    delivered: list[int] = []
    producer.begin_transaction()
    for key, value in records:
        producer.produce(topics.timers_changelog, value, key, partition=partition,
                         on_delivery=lambda err, msg: delivered.append(msg.offset()))  # fmt: skip
    producer.commit_transaction(30)
    return max(delivered)


def identity_of(topics: Topics) -> TopicIdentity:
    identity = topic_identity(topics.settings.kafka_config, topics.timers_changelog)
    assert identity is not None
    return identity


def asked_again(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "asking again" in r.getMessage()]


def put(tx: PartitionBatch, key: bytes, value: bytes | None, headers: Headers = None) -> None:
    if value is None:
        tx.delete(key)
    else:
        tx.put(key, value)
