"""Producing to jobs.intake from the event loop without blocking it.

``produce`` on confluent-kafka only queues a record; the acknowledgement comes through a
delivery callback served by ``poll``. A daemon thread polls, and the callbacks of one send
count its acknowledgements and resolve one asyncio future on the loop
(``call_soon_threadsafe``), so a request awaits its acknowledgement while the loop serves
others, and a batch of a thousand jobs costs one wait and one wake-up. Records are keyed
and partitioned as the Python client does (murmur2 on the partition key), so a job
submitted here and a cancel from any client meet.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from confluent_kafka import KafkaError, KafkaException, Message

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.jobs.outbound import names_of
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


class NotAcknowledged(JobstreamError):
    """The broker did not take a record in time; the API answers 503."""


class AsyncIntake:
    """An idempotent producer to jobs.intake whose sends are awaitable."""

    def __init__(self, settings: Settings, *, delivery_timeout_s: float = 30.0) -> None:
        self.topic = Topics(settings).intake
        self._serialize, _ = make_serde(settings.schema_registry_url)
        self._producer = clients.producer(
            settings, client_id="jobstream.api",
            **{"message.timeout.ms": int(delivery_timeout_s * 1000)},
        )
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="intake-poll", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    async def send(self, events: list[Event]) -> None:
        """Produce every event and return once the broker has acknowledged them all.

        One future for the whole send, settled by the last acknowledgement (or the first
        failure): a batch of a thousand jobs wakes the loop once, not a thousand times.
        """
        loop = asyncio.get_running_loop()
        acks = _Acks(loop, loop.create_future(), len(events))
        for event in events:
            value = self._serialize(event, None)
            key = partition_key(*names_of(event))
            while True:
                try:
                    self._producer.produce(self.topic, value, key, on_delivery=acks)
                    break
                except BufferError:  # local queue full: let the poller drain it
                    await asyncio.sleep(0.01)
                except KafkaException as exc:
                    acks.failed(NotAcknowledged(f"{self.topic}: {exc.args[0].str()}"))
                    break
            if acks.future.done():  # refused already: send no more of it
                break
        await acks.future

    def close(self) -> None:
        self._producer.flush(10)
        self._stop.set()
        self._poller.join(5)


class _Acks:
    """The delivery callback of one send: counts acknowledgements on the poll thread and
    settles the send's future on the loop once, at the last one or the first failure."""

    __slots__ = ("future", "left", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None],
                 count: int) -> None:  # fmt: skip
        self.loop, self.future, self.left = loop, future, count
        if count == 0:
            future.set_result(None)

    def __call__(self, err: KafkaError | None, _msg: Message) -> None:
        self.left -= 1
        if err is not None:
            # The API's own principal lacking an ACL is named as such (a 503 still: the
            # request was fine, the deployment is not).
            refused = denied(err, topic=_msg.topic())
            error = NotAcknowledged(str(refused) if refused else
                                    f"record not acknowledged: {err.str()}")  # fmt: skip
            self.loop.call_soon_threadsafe(_settle, self.future, error)
        elif self.left == 0:
            self.loop.call_soon_threadsafe(_settle, self.future, None)

    def failed(self, error: NotAcknowledged) -> None:
        """A record the producer refused at once (on the loop's own thread)."""
        _settle(self.future, error)


def _settle(future: asyncio.Future[None], error: NotAcknowledged | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
