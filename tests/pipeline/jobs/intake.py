"""Reading jobs.intake back in tests."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.topics import Topics
from tests.support.reader import gather
from tests.support.waiting import wait_for


@dataclass(frozen=True)
class Received:
    key: bytes
    partition: int
    event: Event


def read_intake(topics: Topics, group_id: str, count: int) -> list[Received]:
    """The first ``count`` records of jobs.intake, decoded, in offset order per partition."""
    _, deserialize = make_serde(topics.settings.schema_registry_url)
    consumer = clients.consumer(topics.settings, group_id)
    consumer.subscribe([topics.intake])

    def decoded(message: Message) -> Received:
        assert message.error() is None, message.error()
        return Received(message.key(), message.partition(), deserialize(message.value()))

    return gather(consumer, decoded, count, timeout_s=60,
                  what=f"{count} records on {topics.intake}")


def intake_size(topics: Topics, group_id: str) -> int:
    """Records on jobs.intake, from the partitions' high watermarks.

    Just after the topics are created a partition may still report no leader; that is
    waited out, like any other condition.
    """
    consumer = clients.consumer(topics.settings, group_id)

    def watermarks() -> tuple[int] | None:
        try:
            return (
                sum(
                    consumer.get_watermark_offsets(TopicPartition(topics.intake, p), timeout=5)[1]
                    for p in range(topics.settings.timer_partitions)
                ),
            )
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.NOT_LEADER_FOR_PARTITION:
                raise
            return None

    try:
        return wait_for(watermarks, timeout_s=30, what=f"watermarks of {topics.intake}")[0]
    finally:
        consumer.close()

