"""Timer processors against the real broker: on time, exactly once, bad input isolated."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.jobs import cancelled, submitted
from tests.support.pipeline import SERIALIZE, Executions, in_thread, produce, start_timers
from tests.support.waiting import wait_for


@pytest.fixture
def timers_in_thread(topics: Topics, tmp_path: Path) -> Iterator[Callable[[str], None]]:
    with ExitStack() as running:

        def start(instance: str = "a") -> None:
            options = TIMER_OPTIONS.evolve(instance_id=instance, state_dir=tmp_path / "state")
            running.enter_context(in_thread(timer_runner(topics.settings, options)))

        yield start


@pytest.fixture
def executions(topics: Topics) -> Iterator[Executions]:
    reader = Executions(topics.settings)
    yield reader
    reader.close()


def test_jobs_fire_on_time_exactly_once(
    topics: Topics, timers_in_thread: Callable, executions: Executions
) -> None:
    timers_in_thread("a")
    start = now_ms() + 2000
    jobs = [submitted(run_at_ms=start + i * 10, now_ms=start) for i in range(300)]
    cancelled_job = submitted(run_at_ms=start + 5000)
    produce(
        topics.settings,
        topics.intake,
        [*jobs, cancelled_job, cancelled(cancelled_job.data["job_id"])],
    )

    wait_for(lambda: executions.poll() >= 300, timeout_s=60, what="300 executions")
    time.sleep(0)  # the cancelled job is due at start+5s: poll past it below
    wait_for(
        lambda: now_ms() > start + 5500 and executions.poll() >= 300,
        timeout_s=30,
        what="the cancelled job's time to pass",
    )
    executions.poll()
    assert len(executions.runs) == 300
    assert executions.duplicates() == {}
    lead = longest_lead(topics.settings)
    lateness = sorted(r["fired_at_ms"] - r["scheduled_at_ms"] for r in executions.records.values())
    assert lateness[0] >= -lead, "a job fired earlier than the fire lead"
    assert lateness[int(len(lateness) * 0.99)] < 2000
    assert cancelled_job.data["job_id"] not in {r["job_id"] for r in executions.records.values()}


def test_malformed_intake_goes_to_the_dead_letter_topic(
    topics: Topics, timers_in_thread: Callable, executions: Executions
) -> None:
    timers_in_thread("a")
    good = [submitted(run_at_ms=now_ms()) for _ in range(2)]
    unknown_schema = b"\xc3\x01" + b"\x01" * 8 + b"\x00"
    invalid = SERIALIZE(submitted(run_at_ms=now_ms(), job_type="Bad Type!"))
    produce(topics.settings, topics.intake, [b"not avro at all", unknown_schema, invalid, *good])

    dlq = clients.consumer(topics.settings, "dlq-reader")
    dlq.assign([TopicPartition(topics.intake_dlq, 0, 0)])
    dead: list = []
    wait_for(
        lambda: (
            dead.extend(m for m in dlq.consume(10, timeout=0.2) if not m.error()) or len(dead) >= 3
        ),
        timeout_s=60,
        what="three dead-lettered records",
    )
    dlq.close()
    assert [m.value() for m in dead] == [b"not avro at all", unknown_schema, invalid]
    reasons = [dict(m.headers())["jobstream.error"].decode() for m in dead]
    assert "magic" in reasons[0].lower()
    assert "fingerprint" in reasons[1].lower()
    assert reasons[2].startswith("spec.job_type")
    wait_for(lambda: executions.poll() >= 2, timeout_s=30, what="the good jobs to fire")


def test_kill_9_and_restart_fires_every_job_exactly_once(
    topics: Topics, tmp_path: Path, executions: Executions
) -> None:
    count = 10_000
    start = now_ms() + 3000
    jobs = [submitted(run_at_ms=start + i, now_ms=start) for i in range(count)]  # ~10 s of jobs
    produce(topics.settings, topics.intake, jobs)
    state = tmp_path / "state"
    first = start_timers(topics.settings, "a", state, tmp_path / "timers.log")
    try:
        wait_for(lambda: executions.poll() >= count // 3, timeout_s=120, what="a third fired")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        second = start_timers(topics.settings, "a", state, tmp_path / "timers.log")
        wait_for(lambda: executions.poll() >= count, timeout_s=180, what="every job fired")
        executions.poll()
    finally:
        for process in (first, locals().get("second")):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)
    assert len(executions.runs) == count
    assert executions.duplicates() == {}
    lead = longest_lead(topics.settings)  # 10,000 due within 10 s: the lead grows
    assert all(r["fired_at_ms"] >= r["scheduled_at_ms"] - lead
               for r in executions.records.values())  # fmt: skip


def test_two_processes_and_a_rebalance_fire_exactly_once(
    topics: Topics, tmp_path: Path, executions: Executions
) -> None:
    count = 10_000
    start = now_ms() + 3000
    produce(
        topics.settings,
        topics.intake,
        [submitted(run_at_ms=start + i, now_ms=start) for i in range(count)],
    )
    log = tmp_path / "timers.log"
    a = start_timers(topics.settings, "a", tmp_path / "a", log)
    b = None
    try:
        wait_for(lambda: executions.poll() >= count // 4, timeout_s=120, what="a quarter fired")
        b = start_timers(topics.settings, "b", tmp_path / "b", log)
        wait_for(lambda: executions.poll() >= count // 2, timeout_s=120, what="half fired")
        a.terminate()  # SIGTERM: a leaves the group, b takes every partition
        wait_for(lambda: executions.poll() >= count, timeout_s=180, what="every job fired")
        executions.poll()
    finally:
        for process in (a, b):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)
    assert len(executions.runs) == count
    assert executions.duplicates() == {}


def longest_lead(settings: Settings) -> int:
    """How far ahead the timers may fire: the lead, grown up to its most with a burst
    (pipeline/timers/lead.py)."""
    return max(settings.fire_lead, settings.fire_lead_most) if settings.fire_lead else 0
