"""Producing to jobs.intake from the event loop without blocking it.

``produce`` on confluent-kafka only queues a record; the acknowledgement comes through a
delivery callback served by ``poll``. A daemon thread polls, and each callback resolves
an asyncio future on the loop (``call_soon_threadsafe``), so a request awaits its
acknowledgement while the loop serves others, and a batch of a thousand jobs costs one
wait. Records are keyed and partitioned as the Python client does (murmur2 on the
partition key), so a job submitted here and a cancel from any client meet.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message

from pipeline.config import Settings
from pipeline.errors import JobstreamError
from pipeline.kafka import clients
from pipeline.partitioning import partition_key
from pipeline.serde import Event, make_serde
from pipeline.topics import Topics

log = logging.getLogger(__name__)


class NotAcknowledged(JobstreamError):
    """The broker did not take a record in time; the API answers 503."""


class AsyncIntake:
    """An idempotent producer to jobs.intake whose sends are awaitable."""

    def __init__(self, settings: Settings, *, delivery_timeout_s: float = 30.0) -> None:
        self.topic = Topics(settings).intake
        self._serialize, _ = make_serde(settings.schema_registry_url)
        self._producer = clients.producer(
            settings, **{"message.timeout.ms": int(delivery_timeout_s * 1000)}
        )
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="intake-poll", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    async def send(self, events: list[Event]) -> None:
        """Produce every event and return once the broker has acknowledged them all."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[None]] = []
        for event in events:
            future: asyncio.Future[None] = loop.create_future()
            futures.append(future)
            value = self._serialize(event, None)
            # A workflow's records have no job id: they are keyed by the workflow.
            key = partition_key(event.data.get("job_id") or event.data["workflow_id"],
                                event.data.get("workflow_id"))  # fmt: skip
            callback = _resolver(loop, future)
            while True:
                try:
                    self._producer.produce(self.topic, value, key, on_delivery=callback)
                    break
                except BufferError:  # local queue full: let the poller drain it
                    await asyncio.sleep(0.01)
                except KafkaException as exc:
                    future.set_exception(NotAcknowledged(f"{self.topic}: {exc.args[0].str()}"))
                    break
        await asyncio.gather(*futures)

    def close(self) -> None:
        self._producer.flush(10)
        self._stop.set()
        self._poller.join(5)


def _resolver(loop: asyncio.AbstractEventLoop,
              future: asyncio.Future[None]) -> Callable[[KafkaError | None, Message], None]:
    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        loop.call_soon_threadsafe(_settle, future, err)

    return on_delivery


def _settle(future: asyncio.Future[None], err: KafkaError | None) -> None:
    if future.done():
        return
    if err is None:
        future.set_result(None)
    else:
        future.set_exception(NotAcknowledged(f"record not acknowledged: {err.str()}"))
