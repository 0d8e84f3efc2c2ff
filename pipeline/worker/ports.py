"""What a worker takes from outside: its clock, the makers of its Kafka clients, and the
source of its cancels.

Neither a lane nor the loop builds a client itself: :class:`KafkaClients` makes the real
ones, pipeline/worker/memory.py in-memory stand-ins, so that the worker's logic and its
transactional and offset bookkeeping run in tests with no broker
(pipeline/worker/driver.py). Every instant the worker decides on comes from one
:class:`Clock`, which a test moves by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import Consumer, Producer

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker.app import Handler
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.context import JobContext
from jobstream._pipeline.worker.control import ControlReader
from jobstream._pipeline.worker.executor import RunHandle
from jobstream._pipeline.worker.launched import LaunchStamp


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: deadlines, heartbeats, commits."""

    def wall_ms(self) -> int:
        """Epoch milliseconds: due instants, and the instants the events tell."""


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wall_ms(self) -> int:
        return now_ms()


SYSTEM_CLOCK = SystemClock()


class Executor(Protocol):
    """Runs handlers off the loop's thread; each end goes to the callback it was made with."""

    def submit(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None = None,
               launched: LaunchStamp | None = None) -> RunHandle | None: ...

    def close(self, timeout_s: float = 5.0) -> None: ...


class CancelSource(Protocol):
    def start(self, now_ms: int) -> list[CancelRequest]:
        """The cancels still in force when the worker starts."""

    def poll(self) -> list[CancelRequest]:
        """The cancels that arrived since the last call; never waits."""

    def close(self) -> None: ...


class WorkerClients(Protocol):
    def consumer(self, group: str, config: clients.KafkaConfig) -> Consumer: ...

    def producer(self, client_id: str, config: clients.KafkaConfig) -> Producer:
        """A plain idempotent producer (HEARTBEAT records, the worker's own)."""

    def transactional(self, transactional_id: str) -> Producer:
        """A lane's producer: claims and outcomes, with their offsets."""

    def control(self, deserialize: Callable[[bytes | None], Event]) -> CancelSource: ...


class KafkaClients:
    """The worker's clients on a broker."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def consumer(self, group: str, config: clients.KafkaConfig) -> Consumer:
        return clients.consumer(self.settings, group, **config)

    def producer(self, client_id: str, config: clients.KafkaConfig) -> Producer:
        return clients.producer(self.settings, client_id=client_id, **config)

    def transactional(self, transactional_id: str) -> Producer:
        # Outcomes reach a grown jobs.events' new partitions within seconds.
        return clients.producer(self.settings, client_id=clients.CLIENT_ID,
                                transactional_id=transactional_id,
                                **clients.GROWN_PARTITIONS_SEEN)  # fmt: skip

    def control(self, deserialize: Callable[[bytes | None], Event]) -> CancelSource:
        return ControlReader(self.settings, deserialize)
