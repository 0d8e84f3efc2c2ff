"""The HTTP API as its tests call it: a job submitted, looked for in the listing, and the
records the API put on jobs.intake read back."""

from __future__ import annotations

import httpx
from confluent_kafka import Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import DESERIALIZE
from tests.support.reader import gather


def submit(c: httpx.Client, **body: object) -> httpx.Response:
    """POST /api/v1/jobs of a ``data.process`` job with ``body``'s fields."""
    return c.post("/api/v1/jobs", json={"job_type": "data.process", **body})


def visible(c: httpx.Client, job_id: str, **filters: str) -> bool:
    """Whether the job listing, with ``filters``, shows ``job_id``."""
    page = c.get("/api/v1/jobs", params=filters).json()
    return job_id in [item["job_id"] for item in page["items"]]


def read_intake(settings: Settings, topics: Topics, count: int) -> list[Event]:
    """The first ``count`` records on jobs.intake, in the order of their timestamps."""
    consumer = clients.consumer(settings, "unused")
    consumer.assign([TopicPartition(topics.intake, p, 0) for p in range(settings.timer_partitions)])

    def stamped(m: Message) -> tuple[int, Event] | None:
        return None if m.error() is not None else (m.timestamp()[1], DESERIALIZE(m.value()))

    found = gather(consumer, stamped, count, timeout_s=30, what=f"{count} intake records")
    return [event for _, event in sorted(found, key=lambda pair: pair[0])]
