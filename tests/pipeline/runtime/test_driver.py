"""The three processors on the runtime, driven with records and a clock, with no broker.

What these check is the runtime's share: records in, outputs encoded as the broker would
receive them, the changelog and the stores written at commit, punctuation on the wall
clock. The processors' own rules are tested on their pure parts (tests/pipeline/*/).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.strays import FORWARDED_HEADER
from jobstream._pipeline.retry.processor import RetryProcessor
from jobstream._pipeline.runtime import Output, Processor
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event, JobState, decode_status
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import StatusProcessor
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from tests.pipeline.retry.events import error_info
from tests.pipeline.retry.events import execution as failed_execution
from tests.pipeline.status.events import T0, as_event, execution, fired, outcome, scheduled
from tests.support.handover import Handed
from tests.support.jobs import submitted

SETTINGS = Settings(fire_lead=0)  # the timers below fire on the instant
TOPICS = Topics(SETTINGS)
LEASE_MS = 30_000
Drive = Callable[[Processor[Any]], ProcessorDriver[Any]]


def kinds(outputs: list[Output]) -> list[str]:
    """Lifecycle kinds, other events by name, raw records by topic."""
    named = []
    for output in outputs:
        value = output.value
        if isinstance(value, Event):
            named.append(value.data["kind"] if value.name == "JobLifecycle" else value.name)
        else:
            named.append(output.topic)
    return named


@pytest.fixture
def drive(tmp_path: Path) -> Iterator[Drive]:
    """A driver of a processor at T0, its stores closed after the test."""
    drivers: list[ProcessorDriver[Any]] = []

    def start(processor: Processor[Any]) -> ProcessorDriver[Any]:
        drivers.append(ProcessorDriver(processor, tmp_path / str(len(drivers)), now_ms=T0))
        return drivers[-1]

    yield start
    for driver in drivers:
        driver.close()


@pytest.fixture
def timers(drive: Drive) -> ProcessorDriver[TimerState]:
    return drive(TimerProcessor(SETTINGS))


def test_a_job_fires_when_the_clock_reaches_it_and_its_timer_is_logged_and_dropped(
    timers: ProcessorDriver[TimerState],
) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    assert kinds(timers.pipe(TOPICS.intake, job)) == ["SCHEDULED"]
    assert timers.advance(4999) == []
    fired_now = timers.advance(1)
    assert kinds(fired_now) == ["ExecutionRequested", "FIRED"]
    assert fired_now[0].topic == TOPICS.execution("data.process", "normal")
    # The changelog holds the timer, then its tombstone; the store holds nothing pending.
    logged = timers.changelog[0]
    assert [value is None for _, value in logged] == [False, True]
    assert timers.advance(60_000) == [], "fired once"
    assert timers.store().changelog_offset == 1


def test_a_malformed_intake_record_goes_to_the_dead_letter_topic_and_the_rest_goes_on(
    timers: ProcessorDriver[TimerState],
) -> None:
    bad = timers.pipe(TOPICS.intake, b"not avro", key=b"k")
    assert [(o.topic, o.key, o.value) for o in bad] == [(TOPICS.intake_dlq, b"k", b"not avro")]
    headers = dict(bad[0].headers or ())
    assert headers["jobstream.error"].startswith(b"unknown magic bytes"), "the reason travels"
    assert headers["jobstream.source"] == f"{TOPICS.intake}/0/0".encode()
    assert kinds(timers.pipe(TOPICS.intake, submitted(now_ms=T0, run_at_ms=T0))) == ["SCHEDULED"]
    assert kinds(timers.advance()) == ["ExecutionRequested", "FIRED"]


def test_timers_survive_a_reopen_of_their_store(timers: ProcessorDriver[TimerState]) -> None:
    timers.pipe(TOPICS.intake, submitted(now_ms=T0, run_at_ms=T0 + 1000))
    timers.reopen()
    assert kinds(timers.advance(1000)) == ["ExecutionRequested", "FIRED"]


def test_status_writes_one_record_per_job_and_expires_a_lease_on_the_clock(
    drive: Drive,
) -> None:
    processor = StatusProcessor(SETTINGS, StatusPolicy(lease_ms=LEASE_MS))
    driver = drive(processor)
    run = execution("01JD3W6Q8Z5X7M2K4N9P0R1S2T", epoch=T0)
    for event in (scheduled(run["job_id"]), fired(run), outcome("STARTED", run)):
        assert driver.pipe(TOPICS.events, as_event(event)) == [], "statuses are the changelog's"
    assert [decode_status(value).state for _, value, *_ in driver.changelog[0]] == [
        "SCHEDULED", "QUEUED", "RUNNING"]  # fmt: skip
    assert driver.advance(LEASE_MS - 1) == []
    lost = driver.advance(1)
    assert kinds(lost) == ["LOST"]
    assert lost[0].partition == 0, "back to the job's own partition of jobs.events"
    assert processor.counters()["statuses"] == 4, "three changes, then the run fenced"
    assert processor.counters()["lost"] == 1


def test_status_skips_records_it_cannot_read_and_counts_them(drive: Drive) -> None:
    processor = StatusProcessor(SETTINGS)
    driver = drive(processor)
    assert driver.pipe(TOPICS.events, b"garbage") == []
    assert processor.counters()["malformed"] == 1


def test_the_router_retries_a_failure_and_passes_over_the_rest(drive: Drive) -> None:
    router = RetryProcessor(SETTINGS)
    driver = drive(router)
    run = failed_execution(fired_at_ms=T0)
    failure = outcome("FAILED", run, error=error_info(1, at_ms=T0 + 5))
    routed = driver.pipe(TOPICS.events, as_event(failure))
    assert kinds(routed) == ["RetryScheduled", "RETRY_SCHEDULED"]
    assert [o.topic for o in routed] == [TOPICS.retry, TOPICS.events]
    assert driver.pipe(TOPICS.events, as_event(outcome("SUCCEEDED", run))) == []
    assert router.counters()["retried"] == 1
    assert driver.stores is None, "the router keeps no state"


def test_the_router_passes_over_a_grows_forwarded_copy_of_a_failure(drive: Drive) -> None:
    """A grow of jobs.events forwards a stray failure to its home; the router read the
    original already (docs/adr/0013-events-partitions-that-grow.md)."""
    router = RetryProcessor(SETTINGS)
    driver = drive(router)
    run = failed_execution(fired_at_ms=T0)
    raw = driver.serialize(as_event(outcome("FAILED", run, error=error_info(1, at_ms=T0 + 5))))
    copy = Output(TOPICS.events, b"k", raw, 0, [(FORWARDED_HEADER, b"jobs.events/1/7")])
    assert driver.feed([Handed(copy, 0)]) == []
    original = Output(TOPICS.events, b"k", raw, 0)
    assert kinds(driver.feed([Handed(original, 1)])) == ["RetryScheduled", "RETRY_SCHEDULED"]


def test_a_job_state_is_what_the_status_store_holds_after_commit(drive: Drive) -> None:
    driver = drive(StatusProcessor(SETTINGS))
    job = "01JD3W6Q8Z5X7M2K4N9P0R1S2V"
    driver.pipe(TOPICS.events, as_event(scheduled(job)))
    raw = driver.store().get(b"j" + job.encode())
    assert raw is not None and JobState.SCHEDULED.value.encode() in raw
