"""pytest fixtures for the whole path: a Kafka broker, the pipeline on it, a worker of your app.

Installed with jobstream (the ``pytest11`` entry point), so a project's tests can ask for
them by name. Loading the plugin starts nothing: the broker starts when a test first
asks for a fixture that needs it, once per session. For a handler alone, with no
broker, [`jobstream.testing.run`][jobstream.testing.run] is quicker.

- ``jobstream_broker`` (session): the bootstrap servers of a Kafka broker.
- ``jobstream_pipeline`` (session): a [`Pipeline`][jobstream.pytest_plugin.Pipeline],
  every topic under a prefix of its own and the timers, the status processor and the
  retry router running on them as processes; ``wait_for(job_id, "SUCCEEDED")`` reads a
  job's status back.
- ``jobstream_worker`` (each test): ``start(app, job_types=(), concurrency=4)`` runs a
  worker of your ``WorkerApp`` in a thread of the test's process, and stops it (drained)
  after the test.
- ``jobstream_client`` (session): a [`JobClient`][jobstream.JobClient] on the pipeline's topics.

The broker is ``KAFKA_BOOTSTRAP_SERVERS`` when set; otherwise a container started with
testcontainers (``pip install 'jobstream[testing]'``) where a Docker engine answers, else
a broker of the local Kafka jars (Java 17+ and Maven, as ``jobstream kafka up``): the
choice of ``jobstream._ops.kafka.session.session_broker``, which jobstream's own tests
make too. A broker that cannot start fails the test when ``CI`` is true and skips it
otherwise, saying why.

```python
from jobstream import JobContext, WorkerApp

app = WorkerApp()

@app.handler("report.generate")
def generate(ctx: JobContext) -> dict:
    return {"rows": len(ctx.params["rows"])}

def test_a_report_job_succeeds(jobstream_pipeline, jobstream_worker, jobstream_client):
    jobstream_worker(app)
    job_id = jobstream_client.submit(job_type="report.generate", owner="tests",
                                     params={"rows": [1, 2]})
    status = jobstream_pipeline.wait_for(job_id, "SUCCEEDED")
    assert status.result == '{"rows":2}'
```

The pipeline is shared by the session's tests: give each test's jobs ids or owners of
its own when it reads statuses back.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:  # the plugin loads in every pytest run of a project: it imports little
    from jobstream._ops.stack import Stack
    from jobstream._pipeline.config import Settings
    from jobstream._pipeline.jobs.client import JobClient
    from jobstream._pipeline.serde import JobStatus
    from jobstream._pipeline.topics import Topics
    from jobstream._pipeline.worker.app import WorkerApp
    from jobstream._pipeline.worker.loop import WorkerLoop

__all__ = ["Pipeline", "RunningWorker", "jobstream_broker", "jobstream_client",
           "jobstream_pipeline", "jobstream_worker"]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
WORKER_START_S = 60.0
"""How long a worker may take to join its groups."""
MIN_READ_S = 1.0
"""The least time a read of jobs.status is given, however little of a wait is left."""


def unavailable(message: str) -> NoReturn:
    """What the machine lacks: in CI it fails the test; elsewhere it skips it."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def session_kafka(home: Path) -> Iterator[str]:
    """The body of a session fixture giving a broker's bootstrap servers (its files, if
    started here, under ``home``): the broker ``session_broker`` chooses, stopped after
    the session; ``unavailable`` when it cannot start."""
    from jobstream._ops.kafka.session import session_broker
    from jobstream._pipeline.errors import JobstreamError

    with ExitStack() as stack:
        try:
            bootstrap = stack.enter_context(session_broker(home))
        except JobstreamError as exc:
            unavailable(f"Kafka broker could not start: {exc}")
        yield bootstrap


@pytest.fixture(scope="session")
def jobstream_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bootstrap servers of the session's Kafka broker."""
    yield from session_kafka(tmp_path_factory.mktemp("jobstream-kafka"))


@dataclass(frozen=True)
class Pipeline:
    """The pipeline's topics, and its processors running on them."""

    settings: Settings
    """The topics' prefix and partitions, on the session's broker: what a client or a
    worker of the pipeline is given."""
    topics: Topics
    stack: Stack
    """The timers, status processor and retry router: each a process whose log is
    under ``stack.logs``."""

    def status(self, job_id: str, *, timeout_s: float = 30.0) -> JobStatus | None:
        """The job's latest status on jobs.status; None before it has one. Raises
        ``JobstreamError`` when jobs.status is not read to its end within ``timeout_s``."""
        from jobstream._pipeline.status.query import read_statuses

        return read_statuses(self.settings, job_id=job_id, timeout_s=timeout_s).get(job_id)

    def wait_for(self, job_id: str, *states: str, timeout_s: float = 60.0) -> JobStatus:
        """The job's status once it is in one of ``states`` (``SUCCEEDED``,
        ``DEAD_LETTERED``, ...); AssertionError with its last status after ``timeout_s``
        (each read of jobs.status has the time left, give or take a second)."""
        from jobstream._pipeline.errors import JobstreamError

        deadline = time.monotonic() + timeout_s
        found = None
        while True:
            left = deadline - time.monotonic()
            try:
                found = self.status(job_id, timeout_s=max(left, MIN_READ_S))
            except JobstreamError:
                if time.monotonic() < deadline:  # not the time running out: a missing topic
                    raise
            if found is not None and found.state in states:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} not in {states} after {timeout_s:g} s; "
                                     f"its status: {found}")  # fmt: skip
            time.sleep(0.3)


@pytest.fixture(scope="session")
def jobstream_pipeline(jobstream_broker: str,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:  # fmt: skip
    """Every topic under a prefix of the session's own, and the timers, the status
    processor and the retry router running on them."""
    from jobstream._ops.kafka.ports import free_ports
    from jobstream._ops.stack import components, running_stack, small_topics

    topics = small_topics(jobstream_broker, f"pytest-{uuid.uuid4().hex[:8]}.")
    home = tmp_path_factory.mktemp("jobstream-pipeline")
    processors = components(free_ports(3), job_types=())
    with running_stack(topics.settings, home, processors) as stack:
        yield Pipeline(topics.settings, topics, stack)


@dataclass
class RunningWorker:
    """A worker of the test's app, in a thread of the test's process."""

    loop: WorkerLoop
    thread: threading.Thread
    stopping: threading.Event
    """Set to stop the worker."""
    failure: list[BaseException]
    """What the worker's thread raised, if anything."""

    @property
    def worker_id(self) -> str:
        return self.loop.options.worker_id

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop as on SIGTERM (drain, then close); raise what the worker raised, if
        anything, or AssertionError if it still runs after ``timeout_s``."""
        self.stopping.set()
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            raise AssertionError(f"the worker {self.worker_id} did not stop within "
                                 f"{timeout_s:g} s")  # fmt: skip
        if self.failure:
            raise self.failure[0]


StartWorker = Callable[..., RunningWorker]


@pytest.fixture
def jobstream_worker(jobstream_pipeline: Pipeline) -> Iterator[StartWorker]:
    """``start(app, job_types=(), concurrency=4)``: a worker of ``app`` (every type it
    registers, or ``job_types``) on the pipeline's topics, running once it has joined its
    groups; every worker started is stopped after the test."""
    started: list[RunningWorker] = []

    def start(app: WorkerApp, *, job_types: tuple[str, ...] = (),
              concurrency: int = 4) -> RunningWorker:  # fmt: skip
        worker = _worker(jobstream_pipeline.settings, app, job_types, concurrency)
        started.append(worker)
        return worker

    yield start
    failures = []
    for worker in started:
        try:
            worker.stop()
        except BaseException as exc:  # the others are stopped all the same
            failures.append(exc)
    if failures:
        raise failures[0]


def _worker(settings: Settings, app: WorkerApp, job_types: tuple[str, ...],
            concurrency: int) -> RunningWorker:  # fmt: skip
    from jobstream._pipeline.worker.heartbeat import STARTING
    from jobstream._pipeline.worker.loop import WorkerLoop
    from jobstream._pipeline.worker.options import WorkerOptions

    options = WorkerOptions(worker_id=f"pytest-{uuid.uuid4().hex[:8]}", job_types=job_types,
                            concurrency=concurrency)  # fmt: skip
    loop = WorkerLoop(settings, app, options)
    stopping, failure = threading.Event(), []

    def serve() -> None:
        try:
            loop.run(stopping)
        except BaseException as exc:  # raised again by stop(), in the test's thread
            failure.append(exc)

    thread = threading.Thread(target=serve, name=f"worker-{options.worker_id}", daemon=True)
    worker = RunningWorker(loop, thread, stopping, failure)
    worker.thread.start()
    deadline = time.monotonic() + WORKER_START_S
    while loop.state == STARTING and worker.thread.is_alive():
        if time.monotonic() > deadline:
            late = AssertionError(f"the worker {worker.worker_id} did not start within "
                                  f"{WORKER_START_S:g} s")  # fmt: skip
            try:
                worker.stop()
            except BaseException as exc:  # the start is what the test is told of first
                raise late from exc
            raise late
        time.sleep(0.05)
    if worker.failure:
        raise worker.failure[0]
    return worker


@pytest.fixture(scope="session")
def jobstream_client(jobstream_pipeline: Pipeline) -> Iterator[JobClient]:
    """A JobClient that submits to the pipeline's jobs.intake."""
    from jobstream._pipeline.jobs.client import JobClient

    with JobClient(jobstream_pipeline.settings) as client:
        yield client
