"""Every committed record of a topic from its start (read_committed), decoded."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import Consumer, Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.topics import Topics
from tests.support.waiting import wait_for

_, DESERIALIZE = make_serde()
T = TypeVar("T")


class TopicReader:
    def __init__(self, settings: Settings, topic: str, partitions: int) -> None:
        self.consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
        self.partitions = [TopicPartition(topic, p, 0) for p in range(partitions)]
        self.consumer.assign(self.partitions)
        self.events: list[Event] = []

    @property
    def records(self) -> list[dict[str, Any]]:
        return [event.data for event in self.events]

    def poll(self) -> list[dict[str, Any]]:
        for message in self.consumer.consume(1000, timeout=0.1):
            if message.error() is None:
                self.events.append(DESERIALIZE(message.value()))
        return self.records

    def catch_up(self) -> list[dict[str, Any]]:
        """Read up to the end of every partition as it is now."""
        ends = {tp.partition: self.consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in self.partitions}  # fmt: skip

        def at_end() -> bool:
            self.poll()
            positions = self.consumer.position(self.partitions)
            return all(tp.offset >= ends[tp.partition] for tp in positions if ends[tp.partition])

        wait_for(at_end, timeout_s=60, what="the reader to reach the end of the topic")
        return self.records

    def raw_to_end(self) -> list[Message]:
        """Every committed record up to the end of each partition as it is now, undecoded:
        for topics whose values are not Avro (jobs.results, jobs.logs)."""
        ends = {tp.partition: self.consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in self.partitions}  # fmt: skip
        found: list[Message] = []

        def at_end() -> bool:
            found.extend(message for message in self.consumer.consume(1000, timeout=0.1)
                         if message.error() is None)  # fmt: skip
            positions = self.consumer.position(self.partitions)
            return all(tp.offset >= ends[tp.partition] for tp in positions if ends[tp.partition])

        wait_for(at_end, timeout_s=60, what="the reader to reach the end of the topic")
        return found

    def of_job(self, job_id: str, name: str | None = None,
               kind: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """The records of one job, optionally of one event name and lifecycle kind."""
        self.poll()
        return [e.data for e in self.events if e.data.get("job_id") == job_id
                and (name is None or e.name == name)
                and (kind is None or e.data.get("kind") == kind)]  # fmt: skip

    def close(self) -> None:
        self.consumer.close()


def gather(consumer: Consumer, keep: Callable[[Message], T | None], count: int, *,
           timeout_s: float, what: str) -> list[T]:  # fmt: skip
    """The first ``count`` values ``keep`` makes of the records ``consumer`` reads (None: a
    record passed over), in the order read; the consumer is closed after."""
    found: list[T] = []

    def enough() -> bool:
        for message in consumer.consume(500, timeout=0.2):
            kept = keep(message)
            if kept is not None:
                found.append(kept)
        return len(found) >= count

    try:
        wait_for(enough, timeout_s=timeout_s, what=what)
    finally:
        consumer.close()
    return found


def events_of(settings: Settings, job_id: str) -> list[dict[str, Any]]:
    """Every JobLifecycle of ``job_id`` on jobs.events so far, in the order read."""
    reader = TopicReader(settings, Topics(settings).events, settings.events_partitions)
    try:
        return [r for r in reader.catch_up() if r["job_id"] == job_id]
    finally:
        reader.close()


def results_of(settings: Settings, job_id: str, *, count: int = 1,
               timeout_s: float = 60) -> list[tuple[bytes, dict[str, str]]]:  # fmt: skip
    """The first ``count`` records of ``job_id`` on jobs.results, as (value, headers),
    waiting up to ``timeout_s`` for them (read committed, as any reader)."""
    consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
    topic = Topics(settings).results
    consumer.assign([TopicPartition(topic, p, 0) for p in range(settings.results_partitions)])
    found: list[tuple[bytes, dict[str, str]]] = []

    def read() -> bool:
        for message in consumer.consume(100, timeout=0.2):
            if message.error() is None and message.key() == job_id.encode():
                headers = {k: (v or b"").decode() for k, v in message.headers() or ()}
                found.append((message.value() or b"", headers))
        return len(found) >= count

    try:
        wait_for(read, timeout_s=timeout_s, what=f"{count} result(s) of {job_id} on {topic}")
    finally:
        consumer.close()
    return found
