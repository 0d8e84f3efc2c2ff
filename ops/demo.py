"""``jobstream demo``: show the running stack with real job events.

Today the stack is the broker and the topics: the demo produces one job submission
to jobs.intake and reads it back decoded, proving the wire format end to end.
"""

from __future__ import annotations

import time
import uuid

import orjson
from confluent_kafka import Message, TopicPartition
from rich.console import Console

from pipeline.config import Settings
from pipeline.errors import BrokerError
from pipeline.kafka import clients
from pipeline.serde import Event, make_serde
from pipeline.topics import Topics

console = Console()


def round_trip(settings: Settings, timeout_s: float = 30.0) -> Event:
    """Produce a JobSubmitted to jobs.intake and consume that very record back."""
    topics = Topics(settings)
    serialize, deserialize = make_serde(settings.schema_registry_url)
    job_id = uuid.uuid4().hex
    now_ms = int(time.time() * 1000)
    event = Event("JobSubmitted", {
        "job_id": job_id, "idempotency_key": None, "workflow_id": None,
        "submitted_at_ms": now_ms,
        "spec": {"job_type": "report.generate", "owner": "demo",
                 "params": orjson.dumps({"report": "daily-sales"}).decode(),
                 "priority": "NORMAL", "run_at_ms": now_ms + 60_000, "cron": None,
                 "depends_on": [], "retry": None, "timeout_ms": None, "labels": {}},
    })  # fmt: skip
    delivered: list[Message] = []
    producer = clients.producer(settings)
    producer.produce(
        topics.intake,
        key=job_id.encode(),
        value=serialize(event),
        on_delivery=lambda err, msg: delivered.append(msg) if err is None else None,
    )
    producer.flush(timeout_s)
    if not delivered:
        raise BrokerError(f"the job event was not delivered to {topics.intake}")
    written = delivered[0]
    consumer = clients.consumer(settings, f"demo-{job_id}")
    where = TopicPartition(topics.intake, written.partition() or 0, written.offset() or 0)
    consumer.assign([where])
    try:
        message = consumer.consume(1, timeout=timeout_s)
        if not message:
            raise BrokerError(f"the job event could not be read back from {topics.intake}")
        return deserialize(message[0].value())
    finally:
        consumer.close()


def run_demo(settings: Settings) -> None:
    event = round_trip(settings)
    console.print(
        f"[green]round trip ok[/green]: {event.name} {event.data['job_id']} "
        f"type={event.data['spec']['job_type']} owner={event.data['spec']['owner']}"
    )
