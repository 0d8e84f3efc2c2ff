"""jobs.events of a run, read as it commits (read_committed, from the beginning).

Every record is kept with the instant this reader saw it: a job has *ended* for anyone
downstream when its terminal event is readable, which a crashed process's open
transaction can hold back well after the event's own ``at_ms`` (read_committed readers
stop at the oldest open transaction of a partition). The run's topics have a prefix of
their own, so every event read is one of the run's jobs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics

ENDED = frozenset({"SUCCEEDED", "DEAD_LETTERED", "CANCELLED", "EXPIRED"})
"""Kinds after which a one-off job has nothing more to do."""
FIELDS = ("kind", "job_id", "at_ms", "attempt", "epoch", "execution_id", "worker_id",
          "scheduled_at_ms", "detail", "launched_at_ms")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Seen:
    seen_ms: int
    event: dict[str, Any]
    """The JobLifecycle's fields of :data:`FIELDS`; ``execution_id`` filled from its
    execution when the event carries only that."""


class EventsObserver:
    def __init__(self, settings: Settings) -> None:
        self.topic = Topics(settings).events
        _, self._deserialize = make_serde(settings.schema_registry_url)
        # Small, prompt fetches: the instant a record is seen is measured.
        group = f"{settings.topic_prefix}faults-observer-{uuid.uuid4().hex[:6]}"
        self.consumer = clients.consumer(settings, group, **{"fetch.wait.max.ms": 50})
        partitions = self.consumer.list_topics(self.topic, timeout=30).topics[self.topic].partitions
        self.partitions = [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions]
        self.consumer.assign(self.partitions)
        self.seen: list[Seen] = []
        self.fired: set[str] = set()
        self.ended: set[str] = set()

    def poll(self, timeout_s: float = 0.1) -> int:
        messages = self.consumer.consume(10_000, timeout=timeout_s)
        seen_ms = now_ms()
        for message in messages:
            value = message.value()
            if message.error() is not None or not value:
                continue
            decoded = self._deserialize(value)
            if decoded.name != "JobLifecycle":
                continue
            data = decoded.data
            event = {name: data.get(name) for name in FIELDS}
            if event["execution_id"] is None and data.get("execution"):
                event["execution_id"] = data["execution"].get("execution_id")
            self.seen.append(Seen(seen_ms, event))
            job_id = str(data["job_id"])
            if event["kind"] == "FIRED":
                self.fired.add(job_id)
            elif event["kind"] in ENDED:
                self.ended.add(job_id)
        return len(messages)

    def at_end(self) -> bool:
        """Whether this reader has read every partition up to its end as it is now."""
        self.poll(0.1)
        for tp in self.consumer.position(self.partitions):
            _, high = self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            if high > 0 and tp.offset < high:
                return False
        return True

    def close(self) -> None:
        self.consumer.close()
