"""A partition's low and high offsets, asked until the partition has a leader that answers."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

log = logging.getLogger(__name__)

# Right after a topic is created, or while its leader moves (a broker down or back),
# brokers answer these for a moment; librdkafka flags only some of them as retriable.
NOT_READY = frozenset({
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
})  # fmt: skip


def watermarks(consumer: Consumer, tp: TopicPartition, timeout_s: float = 60.0) -> tuple[int, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            if time.monotonic() > deadline or not (error.retriable() or error.code() in NOT_READY):
                raise
            log.debug("%s[%d] not ready: %s", tp.topic, tp.partition, error)
            time.sleep(0.2)
            _refresh_metadata(consumer, tp.topic)


def _refresh_metadata(consumer: Consumer, topic: str) -> None:
    """Ask for the topic's metadata afresh: a client that reads no partition of it (a
    restore consumer between two restores) may otherwise keep a leader that is gone, and
    answer "unknown partition" long after another broker took over."""
    try:
        consumer.list_topics(topic, timeout=5)
    except KafkaException as exc:
        log.debug("metadata of %s: %s", topic, exc)
