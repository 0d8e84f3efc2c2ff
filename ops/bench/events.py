"""Reads a run's jobs.events as it commits, at the least cost to the machine measured.

The reader keeps each record's raw bytes and decodes them only after the run. While the
run goes on it needs just the number of jobs that ended, for the progress bar and to
know when to stop, which it reads off the record's kind byte
(:func:`jobstream._pipeline.serde.peek.lifecycle_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.serde.peek import lifecycle_kind
from jobstream._pipeline.topics import Topics

ENDED = ("SUCCEEDED", "DEAD_LETTERED", "CANCELLED")
"""Kinds after which a one-off job has nothing more to do."""

LOGGED_AT = "logged_at_ms"
"""Added to each decoded event: its record's Kafka timestamp, the producer's clock as it
produced the record (for a transactional producer, as its commit began)."""


def ends_a_job(raw: bytes) -> bool:
    """Whether a jobs.events record is a JobLifecycle of a kind in :data:`ENDED`."""
    return lifecycle_kind(raw) in ENDED


@dataclass
class EventsReader:
    """A read_committed consumer of the run's jobs.events, from the beginning."""

    settings: Settings
    raw: list[bytes] = field(default_factory=list)
    logged_ms: list[int] = field(default_factory=list)
    """Each raw record's Kafka timestamp."""
    ended: int = 0
    """Records that end a job (a redelivered one's second end counts twice)."""

    def __post_init__(self) -> None:
        topic = Topics(self.settings).events
        # Large, rare fetches: the reader should cost the broker as little as it can.
        rare = {"fetch.min.bytes": 1 << 20, "fetch.wait.max.ms": 200}
        self.consumer = clients.consumer(self.settings, f"{self.settings.topic_prefix}bench",
                                         **rare)  # fmt: skip
        partitions = self.consumer.list_topics(topic, timeout=30).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])

    def poll(self, timeout_s: float = 0.2) -> int:
        """Take what has arrived (waiting up to ``timeout_s`` for the first record)."""
        messages = self.consumer.consume(50_000, timeout=timeout_s)
        for message in messages:
            value = message.value()
            if message.error() is None and value:
                self.raw.append(value)
                self.logged_ms.append(message.timestamp()[1])
                self.ended += ends_a_job(value)
        return len(messages)

    def decoded(self) -> list[dict[str, object]]:
        """Every JobLifecycle read, as its fields and :data:`LOGGED_AT`."""
        _, deserialize = make_serde()
        events = ((deserialize(raw), logged) for raw, logged in zip(self.raw, self.logged_ms,
                                                                    strict=True))  # fmt: skip
        return [{**event.data, LOGGED_AT: logged} for event, logged in events
                if event.name == "JobLifecycle"]  # fmt: skip

    def close(self) -> None:
        self.consumer.close()
