"""Checkpoints end to end on the real broker: a handler that checkpoints every 10% and is
SIGKILLed at 55% resumes at 50% on its next attempt, with threads (its worker killed: the
lease ends LOST, the retry runs on the restarted worker) and with ``--isolation process``
(its child killed: FAILED WorkerCrashed; or its worker killed, children and all).

The handler (tests/support/checkpoint_app.py) counts 100 steps of 50 ms, saves ``{"done":
n}`` every 10 steps and reports each step as progress naming its process; on its first
attempt it stops at step 55, there to be killed once jobs.status shows 55%."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from confluent_kafka import TopicPartition

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import DESERIALIZE
from tests.support.reader import events_of
from tests.support.stack import module_topics, running_stack
from tests.support.waiting import wait_for

APP = "tests.support.checkpoint_app"
OWNER = "checkpoints"
THREADS, PROCESSES = "worker-threads", "worker-processes"
WORKER_OF = {"ckpt.steps": THREADS, "ckpt.isolated": PROCESSES}


@pytest.fixture(scope="module")
def pipeline_topics(kafka_bootstrap: str) -> Topics:
    """The module's own topics, named anew each session: a broker kept between sessions
    keeps them, with records of the schemas of the day they were written."""
    return module_topics(kafka_bootstrap, f"ckpt-{uuid.uuid4().hex[:8]}.")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Timers, status processor (3 s leases), retry router, a worker with threads and one
    with ``--isolation process``, each beating every 0.5 s."""
    base = free_ports(5)
    beat = ("--heartbeat", "0.5s")
    parts = [*components(base, app=APP, job_types=(), lease_s=3),
             worker("ckpt.steps", "threads", base + 3, app=APP, extra=beat),
             worker("ckpt.isolated", "processes", base + 4, app=APP,
                    extra=(*beat, "--isolation", "process"))]  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


def status(topics: Topics, job_id: str) -> JobStatus | None:
    return read_statuses(topics.settings, owner=OWNER).get(job_id)


def submit_held_at_55(topics: Topics, job_type: str) -> tuple[str, JobStatus]:
    """A job that stops at step 55 on its first attempt; its id and its status once
    jobs.status shows it there."""
    retry = RetryPolicy(max_attempts=3, initial_backoff_ms=200, jitter=0)
    request = JobRequest(job_type=job_type, owner=OWNER, retry=retry,
                         params={"pause_s": 0.05, "hold_at": 55})  # fmt: skip
    with JobClient(topics.settings) as client:
        job_id = client.submit(request)

    def at_55() -> JobStatus | None:
        found = status(topics, job_id)
        held = found is not None and found.progress is not None
        return found if held and found.progress.fraction >= 0.55 else None  # type: ignore[union-attr]

    return job_id, wait_for(at_55, timeout_s=60, interval_s=0.2, what="the job at 55%")


def kill_worker(stack: Stack, name: str) -> None:
    """SIGKILL the worker, as a crash would, and start it again as it was."""
    _, process = stack.processes[name]
    process.kill()
    process.wait(30)
    stack.restart(name)


def succeeded(topics: Topics, job_id: str) -> JobStatus:
    def ended() -> JobStatus | None:
        found = status(topics, job_id)
        return found if found is not None and found.state == "SUCCEEDED" else None

    return wait_for(ended, timeout_s=90, interval_s=0.3, what=f"job {job_id} to succeed")


def checkpoints_on_topic(topics: Topics, job_id: str) -> list[Any]:
    """The committed values of ``job_id`` on jobs.checkpoints, decoded (None: a tombstone)."""
    consumer = clients.consumer(topics.settings, f"reader-{job_id}")
    partitions = [TopicPartition(topics.checkpoints, p, 0)
                  for p in range(topics.settings.events_partitions)]  # fmt: skip
    consumer.assign(partitions)
    ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions}
    found: list[Any] = []

    def at_end() -> bool:
        for message in consumer.consume(500, timeout=0.2):
            if message.error() is None and message.key() == job_id.encode():
                value = message.value()
                found.append(None if value is None else _state(value))
        positions = consumer.position(partitions)
        return all(tp.offset >= ends[tp.partition] for tp in positions if ends[tp.partition])

    try:
        wait_for(at_end, timeout_s=30, what="the end of jobs.checkpoints")
    finally:
        consumer.close()
    return found


def _state(value: bytes) -> Any:
    return orjson.loads(DESERIALIZE(value).data.state)


def resumed_at_50(topics: Topics, job_id: str, failure: str) -> dict[str, Any]:
    """The job succeeded on its second attempt, which began at 50; its events say how."""
    done = succeeded(topics, job_id)
    result = orjson.loads(done.result or "{}")
    assert (result["began_at"], result["attempt"], done.attempt) == (50, 2, 2), result
    events = events_of(topics.settings, job_id)
    [ended] = [e for e in events if e["kind"] == failure]
    assert ended["checkpoint"] is not None, ended
    assert orjson.loads(ended["checkpoint"]["state"]) == {"done": 50}
    [second] = [e for e in events if e["kind"] == "STARTED" and e["attempt"] == 2]
    assert orjson.loads(second["execution"]["resume_from"]["state"]) == {"done": 50}
    saved = checkpoints_on_topic(topics, job_id)
    assert saved[:5] == [{"done": d} for d in range(10, 60, 10)], saved
    assert saved[-1] is None, "the success left a tombstone"
    return result


def test_threads_a_killed_worker_s_job_resumes_at_50_after_its_lease(
    stack: Stack, pipeline_topics: Topics
) -> None:
    started = time.monotonic()
    job_id, _ = submit_held_at_55(pipeline_topics, "ckpt.steps")
    kill_worker(stack, THREADS)
    resumed_at_50(pipeline_topics, job_id, "LOST")
    print(f"\nthreads, worker killed: resumed and done in {time.monotonic() - started:.1f} s")


def test_processes_a_killed_child_s_job_resumes_at_50(
    stack: Stack, pipeline_topics: Topics
) -> None:
    started = time.monotonic()
    job_id, held = submit_held_at_55(pipeline_topics, "ckpt.isolated")
    assert held.progress is not None and held.progress.message is not None
    child = int(held.progress.message.rsplit(" ", 1)[1])
    _, worker_process = stack.processes[PROCESSES]
    assert child != worker_process.pid, "the handler runs in a child"
    os.kill(child, signal.SIGKILL)
    resumed_at_50(pipeline_topics, job_id, "FAILED")
    failed = [e for e in events_of(pipeline_topics.settings, job_id) if e["kind"] == "FAILED"]
    assert failed[0]["error"]["error_type"] == "WorkerCrashed"
    print(f"\nprocesses, child killed: resumed and done in {time.monotonic() - started:.1f} s")


def test_processes_a_killed_worker_s_job_resumes_at_50_after_its_lease(
    stack: Stack, pipeline_topics: Topics
) -> None:
    started = time.monotonic()
    job_id, _ = submit_held_at_55(pipeline_topics, "ckpt.isolated")
    kill_worker(stack, PROCESSES)
    result = resumed_at_50(pipeline_topics, job_id, "LOST")
    assert result["pid"] != stack.processes[PROCESSES][1].pid
    print(f"\nprocesses, worker killed: resumed and done in {time.monotonic() - started:.1f} s")
