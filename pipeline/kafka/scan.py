"""Read a topic from offset zero to its end, as it is when the reading starts.

Every partition is assigned (no consumer group, nothing committed) and read with
read_committed; a partition is done at its end-of-partition event, which a transactional
topic raises at its last stable offset. Partitions empty at the start are done at once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import BrokerError, ConfigurationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.kafka.watermarks import watermarks


def partitions_of(consumer: Consumer, topic: str) -> list[int]:
    """The topic's partitions; ConfigurationError when the broker has no such topic,
    AuthorizationError when this principal may not see it."""
    metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
    refused = denied(None if metadata is None else metadata.error, topic=topic,
                     operation="DESCRIBE")  # fmt: skip
    if refused is not None:
        raise refused
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise ConfigurationError(f"no topic {topic} on the broker")
    return sorted(metadata.partitions)


def scan_consumer(settings: Settings, **tuning: clients.KafkaValue) -> Consumer:
    return clients.consumer(settings, f"jobstream.scan.{uuid.uuid4().hex}",
                            **{"enable.partition.eof": True, **tuning})  # fmt: skip


def read_at(settings: Settings, topic: str, partition: int, offset: int, *,
            timeout_s: float = 10.0) -> Message | None:  # fmt: skip
    """The record at ``offset`` of a partition; None when the topic no longer holds it (its
    retention) or the broker did not answer within ``timeout_s``."""
    consumer = scan_consumer(settings)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            message = consumer.poll(min(left, 0.5))
            if message is None:
                continue
            error = message.error()
            if error is None:
                return message if message.offset() == offset else None
            if error.code() == KafkaError._PARTITION_EOF:
                return None
            if error.code() != KafkaError.OFFSET_OUT_OF_RANGE:
                raise BrokerError(f"reading {topic}[{partition}]@{offset}: {error.str()}")
            return None
        return None
    finally:
        consumer.close()


class TopicScan:
    """Batches of the records of ``topic`` from offset zero to its end; ``total`` is the
    offsets to read (an upper bound: compaction and transaction markers take some).

    ``source`` is the settings of the cluster to read, or a consumer of another one (a
    mirror's target, known by its address alone) made with ``enable.partition.eof``,
    which the scan then owns and closes. ``tuning`` is the consumer's own settings (a
    follower that keeps reading sets its fetch wait). With ``timeout_s`` the reading
    stops after that long, read to the end or not (``complete`` says which): for a caller
    that asks again rather than wait on a cluster that may be gone."""

    def __init__(self, source: Settings | Consumer, topic: str, *, chunk: int = 10_000,
                 tuning: Mapping[str, clients.KafkaValue] | None = None,
                 timeout_s: float | None = None) -> None:  # fmt: skip
        self.topic = topic
        self.chunk = chunk
        self.timeout_s = timeout_s
        self.consumer = (source if isinstance(source, Consumer)
                         else scan_consumer(source, **(tuning or {})))  # fmt: skip
        self.total = 0
        self.pending: set[int] = set()
        try:
            self.partitions = partitions_of(self.consumer, self.topic)
            for p in self.partitions:
                low, high = watermarks(self.consumer, TopicPartition(self.topic, p))
                self.total += high - low
                if high > low:
                    self.pending.add(p)
        except BaseException:
            self.consumer.close()
            raise

    @property
    def complete(self) -> bool:
        """Whether every partition was read to its end."""
        return not self.pending

    def __iter__(self) -> Iterator[list[Message]]:
        self.consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                              for p in self.partitions])  # fmt: skip
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        while self.pending and (deadline is None or time.monotonic() < deadline):
            batch = []
            for message in self.consumer.consume(self.chunk, timeout=0.2):
                error = message.error()
                if error is None:
                    batch.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    self.pending.discard(message.partition() or 0)
                else:
                    raise BrokerError(f"reading {self.topic}: {error.str()}")
            if batch:
                yield batch

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> TopicScan:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
