"""Readers of what a worker wrote, and a worker runtime run in a thread, for tests."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import TopicPartition

from pipeline.config import Settings
from pipeline.kafka import clients
from pipeline.topics import Topics
from pipeline.worker import WorkerApp
from pipeline.worker.runtime import WorkerRuntime
from tests.support.pipeline import DESERIALIZE
from tests.support.waiting import wait_for


class TopicReader:
    """Every committed record of a topic from the start, decoded (read_committed)."""

    def __init__(self, settings: Settings, topic: str, partitions: int) -> None:
        self.consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
        self.partitions = [TopicPartition(topic, p, 0) for p in range(partitions)]
        self.consumer.assign(self.partitions)
        self.records: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        for message in self.consumer.consume(1000, timeout=0.1):
            if message.error() is None:
                self.records.append(DESERIALIZE(message.value()).data)
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

    def close(self) -> None:
        self.consumer.close()


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
    runtime: WorkerRuntime
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
