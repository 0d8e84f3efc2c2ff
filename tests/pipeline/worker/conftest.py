"""Worker test fixtures: a worker loop in a thread, readers of what it wrote."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.loop import WorkerLoop
from jobstream._pipeline.worker.options import WorkerOptions
from tests.pipeline.worker.support import DriveWorker, EventLog, StartWorker, TopicReader, Worker


@pytest.fixture
def runner() -> Iterator[tuple[JobExecutor, queue.SimpleQueue[Finished]]]:
    """A thread executor of four slots, and the queue its runs end into."""
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor = JobExecutor(4, ends.put)
    yield executor, ends
    executor.close()


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds blocked handlers; always opened at the end so no handler thread lingers."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def quick_app() -> WorkerApp:
    """An app whose data.process runs succeed at once."""
    app = WorkerApp()

    @app.handler("data.process")
    def quick(ctx: JobContext) -> int:
        return ctx.attempt

    return app


@pytest.fixture
def gated_app(gate: threading.Event) -> WorkerApp:
    """An app whose data.process runs wait for the gate (120 s at most), then succeed."""
    app = WorkerApp()

    @app.handler("data.process")
    def gated(ctx: JobContext) -> str:
        gate.wait(120)
        return "done"

    return app


@pytest.fixture
def events(topics: Topics) -> Iterator[EventLog]:
    reader = EventLog(topics.settings, topics.events, topics.settings.events_partitions)
    yield reader
    reader.close()


@pytest.fixture
def workers_topic(topics: Topics) -> Iterator[TopicReader]:
    reader = TopicReader(topics.settings, topics.workers, topics.settings.workers_partitions)
    yield reader
    reader.close()


@pytest.fixture
def start_worker(topics: Topics) -> Iterator[StartWorker]:
    started: list[Worker] = []

    def start(app: WorkerApp, **options: Any) -> Worker:
        options.setdefault("worker_id", f"test-worker-{len(started)}")
        options.setdefault("heartbeat_s", 30.0)
        worker = Worker(WorkerLoop(topics.settings, app, WorkerOptions(**options)))
        worker.thread = threading.Thread(target=worker.run, daemon=True)
        worker.thread.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.abandon.set()
        worker.stop.set()
    for worker in started:
        assert worker.thread is not None
        worker.thread.join(90)
        assert worker.error is None, f"worker failed: {worker.error!r}"


@pytest.fixture
def drive(gate: threading.Event) -> Iterator[DriveWorker]:
    """Workers with no broker (pipeline/worker/driver.py); the gate opens and each one
    still open is shut down, giving up what runs, at the end."""
    made: list[WorkerDriver] = []

    def make(app: WorkerApp, **options: Any) -> WorkerDriver:
        driver = WorkerDriver(app, **options)
        made.append(driver)
        return driver

    yield make
    gate.set()
    for driver in made:
        if not driver.closed:
            driver.shut_down(wait=False)
