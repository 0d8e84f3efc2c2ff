"""Readers of what a worker wrote, and a worker loop run in a thread, for tests."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.loop import WorkerLoop
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

WHO, WHY = "cli:ann@box", "wrong month"


class EventLog(TopicReader):
    """jobs.events, with the questions worker tests ask of it."""

    def of(self, execution_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        self.poll()
        return [r for r in self.records if r["execution_id"] == execution_id
                and (kind is None or r["kind"] == kind)]  # fmt: skip

    def kinds(self, execution_id: str) -> list[str]:
        return [r["kind"] for r in self.of(execution_id)]

    def wait(self, execution_id: str, kind: str, count: int = 1,
             timeout_s: float = 60) -> list[dict[str, Any]]:  # fmt: skip
        def enough() -> list[dict[str, Any]]:
            found = self.of(execution_id, kind)
            return found if len(found) >= count else []

        return wait_for(enough, timeout_s=timeout_s, what=f"{count} {kind} of {execution_id}")


@dataclass
class Worker:
    runtime: WorkerLoop
    stop: threading.Event = field(default_factory=threading.Event)
    abandon: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            self.runtime.run(self.stop, self.abandon)
        except BaseException as exc:  # surfaced by the fixture's teardown
            self.error = exc
            raise

    def shut_down(self, timeout_s: float = 90) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the worker did not stop"


class StartWorker(Protocol):
    def __call__(self, app: WorkerApp, **options: Any) -> Worker: ...


class DriveWorker(Protocol):
    def __call__(self, app: WorkerApp, **options: Any) -> WorkerDriver: ...


def cancel_request(execution: Event, *, at_ms: int, up_to_epoch: int = 0,
                   requested_by: str = WHO, reason: str = WHY) -> CancelRequest:  # fmt: skip
    """The CancelRequested the API writes for ``execution``'s job (``up_to_epoch`` 0:
    every execution of it)."""
    return CancelRequest(job_id=execution.data["job_id"], requested_at_ms=at_ms,
                         up_to_epoch=up_to_epoch, requested_by=requested_by,
                         reason=reason)  # fmt: skip


def assert_cancelled(record: Any, worker_id: str = "test-worker-0") -> None:
    assert record["requested_by"] == WHO and record["detail"] == WHY
    assert record["worker_id"] == worker_id and record["execution"] is not None


def committed_offsets(settings: Settings, job_type: str) -> int:
    """Records of ``job_type`` committed by its worker group, over every tier and partition."""
    topics = Topics(settings)
    consumer = clients.consumer(settings, f"{settings.topic_prefix}jobstream.workers.{job_type}")
    try:
        partitions = [TopicPartition(topics.execution(job_type, tier), p)
                      for tier in ("high", "normal", "low")
                      for p in range(settings.exec_partitions)]  # fmt: skip
        return sum(max(tp.offset, 0) for tp in consumer.committed(partitions, timeout=10))
    finally:
        consumer.close()


class HangingAsync:
    """An app whose image.render runs are coroutines that wait two minutes: :attr:`began`
    is set as one begins, :attr:`cancelled` as it is cancelled."""

    def __init__(self) -> None:
        self.began, self.cancelled = threading.Event(), threading.Event()
        self.app = WorkerApp()

        @self.app.handler("image.render")
        async def hang(ctx: JobContext) -> str:
            self.began.set()
            try:
                await asyncio.sleep(120)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return "never"
