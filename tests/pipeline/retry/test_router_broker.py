"""The retry router against the real broker, alone and with the timers behind it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.backoff import compute_backoff
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.model.retry import RetryDefaults
from jobstream._pipeline.retry.processor import ROUTER_OPTIONS, RetryProcessor, router_runner
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.pipeline.retry.events import (
    error_info,
    execution,
    failure,
    retry_policy,
    succeeded,
)
from tests.support.jobs import submitted
from tests.support.pipeline import SERIALIZE, Executions, in_thread, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

TIMEOUT_S = 90  # a shared 2-core machine: group joins can take a while


@pytest.fixture
def router(topics: Topics) -> Iterator[RetryProcessor]:
    runner = router_runner(topics.settings, ROUTER_OPTIONS.evolve(instance_id="t", poll_ms=50),
                           RetryDefaults())  # fmt: skip
    with in_thread(runner):
        yield runner.processor  # what it decided


@pytest.fixture
def reader(topics: Topics) -> Iterator[Callable[[str, int], TopicReader]]:
    opened: list[TopicReader] = []

    def open_reader(topic: str, partitions: int) -> TopicReader:
        opened.append(TopicReader(topics.settings, topic, partitions))
        return opened[-1]

    yield open_reader
    for each in opened:
        each.close()


def test_a_failure_becomes_a_retry_at_failure_time_plus_backoff(
    topics: Topics, router: RetryProcessor, reader: Callable[[str, int], TopicReader]
) -> None:
    s = topics.settings
    policy = retry_policy(initial_backoff_ms=1500, jitter=0.5)
    run = execution(attempt=1, retry=policy, idempotency_key="key-1")
    error = error_info(1)
    failed = failure("FAILED", run, error=error)
    produce(s, topics.events, [failed])

    retries = reader(topics.retry, s.timer_partitions)
    events = reader(topics.events, s.events_partitions)
    (scheduled,) = wait_for(lambda: retries.of_job(run["job_id"]), timeout_s=TIMEOUT_S,
                            what="the RetryScheduled")  # fmt: skip
    backoff = compute_backoff(1, initial_ms=1500, coefficient=2.0, max_ms=300_000, jitter=0.5,
                              seed=run["execution_id"])  # fmt: skip
    assert 750 <= backoff <= 1500
    assert scheduled.retry_at_ms == failed.data.at_ms + backoff
    assert (scheduled.attempt, [plain(e) for e in scheduled.errors]) == (2, [error])
    assert (scheduled.idempotency_key, plain(scheduled.spec)) == ("key-1", run["spec"])
    (step,) = wait_for(lambda: events.of_job(run["job_id"], kind="RETRY_SCHEDULED"),
                       timeout_s=TIMEOUT_S, what="the RETRY_SCHEDULED event")  # fmt: skip
    assert (step.scheduled_at_ms, step.attempt) == (scheduled.retry_at_ms, 2)


def test_records_passed_over_commit_once_a_second_and_a_failure_with_its_batch(
    topics: Topics, reader: Callable[[str, int], TopicReader]
) -> None:
    s = topics.settings
    runner = router_runner(s, ROUTER_OPTIONS.evolve(instance_id="t", poll_ms=50), RetryDefaults())
    with in_thread(runner):
        produce(s, topics.events, [succeeded(execution())])
        wait_for(lambda: runner.task.stats.consumed, timeout_s=TIMEOUT_S, what="a first record")
        before, started = runner.task.stats.transactions, time.monotonic()
        producer = clients.producer(s)
        for _ in range(20):  # two seconds of records the router passes over
            run = execution()
            producer.produce(topics.events, SERIALIZE(succeeded(run)), run["job_id"].encode())
            producer.flush(10)
            time.sleep(0.1)
        wait_for(lambda: runner.task.stats.consumed >= 21, timeout_s=TIMEOUT_S,
                 what="every record read")  # fmt: skip
        seconds = time.monotonic() - started
        # one transaction a second, not one per batch (20)
        assert runner.task.stats.transactions - before <= seconds + 2
        run = execution()
        produce(s, topics.events, [failure("FAILED", run, error=error_info(1))])
        retries = reader(topics.retry, s.timer_partitions)
        wait_for(lambda: retries.of_job(run["job_id"]), timeout_s=TIMEOUT_S,
                 what="the RetryScheduled")  # fmt: skip


def test_exhausted_and_non_retryable_jobs_go_to_their_dead_letter_topic(
    topics: Topics, router: RetryProcessor, reader: Callable[[str, int], TopicReader]
) -> None:
    s = topics.settings
    earlier = [error_info(1), error_info(2)]
    exhausted = execution(attempt=3, errors=earlier)
    bad_input = execution(attempt=1, job_type="video.encode")  # a type with no topics yet
    last, refused = error_info(3), error_info(1, "BadInput", retryable=False)
    produce(s, topics.events, [
        failure("FAILED", None, error=error_info(1)),  # no execution: skipped, counted
        failure("FAILED", exhausted, error=last),
        failure("FAILED", bad_input, error=refused),
    ])  # fmt: skip

    dlq = reader(topics.dead_letter("data.process"), s.dlq_partitions)
    (dead,) = wait_for(lambda: dlq.of_job(exhausted["job_id"]), timeout_s=TIMEOUT_S,
                       what="the exhausted job's dead letter")  # fmt: skip
    assert (dead.reason, dead.attempts) == ("exhausted", 3)
    assert [plain(e) for e in dead.errors] == [*earlier, last]
    _wait_for_topic(topics, topics.dead_letter("video.encode"))
    other = reader(topics.dead_letter("video.encode"), s.dlq_partitions)
    (dead,) = wait_for(lambda: other.of_job(bad_input["job_id"]), timeout_s=TIMEOUT_S,
                       what="the non-retryable job's dead letter")  # fmt: skip
    assert (dead.reason, dead.attempts, [plain(e) for e in dead.errors]) == (
        "non_retryable", 1, [refused]
    )  # fmt: skip

    events = reader(topics.events, s.events_partitions)
    for job in (exhausted, bad_input):
        (step,) = wait_for(lambda job=job: events.of_job(job["job_id"], kind="DEAD_LETTERED"),
                           timeout_s=TIMEOUT_S, what="the DEAD_LETTERED event")  # fmt: skip
        assert plain(step.error) == (last if job is exhausted else refused)
    assert router.router.stats.unroutable == 1
    assert router.router.stats.retried == 0


def test_retry_then_success_through_the_timers_at_the_backoff_times(
    topics: Topics, router: RetryProcessor, tmp_path: Path
) -> None:
    s = topics.settings
    timers = timer_runner(s, TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "state"))
    with in_thread(timers), closing(Executions(s)) as executions:
        # Both processes are in their groups before the clock of the test starts.
        warmup = submitted()
        produce(s, topics.intake, [warmup])
        produce(s, topics.events, [failure("LOST", None)])
        wait_for(lambda: executions.poll() >= 1 and router.router.stats.unroutable == 1,
                 timeout_s=TIMEOUT_S, what="the timers and the router to run")  # fmt: skip

        policy = retry_policy(initial_backoff_ms=1000, backoff_coefficient=2.0, jitter=0.0)
        run = execution(attempt=1, retry=policy, idempotency_key="key-e2e")
        job_id = run["job_id"]
        for attempt, backoff in ((1, 1000), (2, 2000)):
            failed = failure("FAILED", run, error=error_info(attempt))
            produce(s, topics.events, [failed])
            run = wait_for(lambda a=attempt: _attempt(executions, job_id, a + 1),
                           timeout_s=TIMEOUT_S, what=f"attempt {attempt + 1}")  # fmt: skip
            due = failed.data.at_ms + backoff
            assert run.scheduled_at_ms == due
            lead = s.fire_lead  # a retry fires ahead by the lead, like a first run
            assert due - lead <= run.fired_at_ms, "fired before its backoff's instant"
            assert run.fired_at_ms < due + 30_000, "fired as if the backoff were ignored"
            assert run.idempotency_key == "key-e2e"
            assert [e.attempt for e in run.errors] == list(range(1, attempt + 1))

        # The third attempt succeeds; a record after it on the same partition shows the
        # router has read past it without scheduling anything more.
        produce(s, topics.events, [succeeded(run), failure("LOST", None, job_id=job_id)])
        wait_for(lambda: router.router.stats.unroutable == 2, timeout_s=TIMEOUT_S,
                 what="the router to read past the success")  # fmt: skip
        assert router.router.stats.retried == 2
        assert router.router.stats.dead_lettered == 0


def _wait_for_topic(topics: Topics, name: str) -> None:
    consumer = clients.consumer(topics.settings, "metadata")
    try:
        wait_for(lambda: name in consumer.list_topics(timeout=10).topics, timeout_s=TIMEOUT_S,
                 what=f"topic {name}")  # fmt: skip
    finally:
        consumer.close()


def _attempt(executions: Executions, job_id: str, attempt: int) -> dict | None:
    executions.poll()
    return next((r for r in executions.records.values()
                 if r["job_id"] == job_id and r["attempt"] == attempt), None)  # fmt: skip
