"""The whole pipeline as processes (timers, status processor, retry router, workers)
against the real broker: what a user sees on jobs.status and jobs.events."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from jobstream._ops.kafka.ports import free_base_port
from jobstream._ops.stack import Stack, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.dlq.reader import DlqFilter, DlqReader
from jobstream._pipeline.dlq.redrive import Redriver
from jobstream._pipeline.jobs.aio import AsyncJobClient
from jobstream._pipeline.jobs.client import JobClient, WorkflowSubmission
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.reader import events_of
from tests.support.stack import (
    APP,
    pipeline_fixtures,
)
from tests.support.stack import settled as stack_settled
from tests.support.waiting import wait_for

LEASE_S = 3


pipeline_topics, stack = pipeline_fixtures("e2e", lease_s=LEASE_S)


def settled(settings: Settings, ids: dict[str, str], states: dict[str, set[str]],
            timeout_s: float = 120) -> dict[str, JobStatus]:  # fmt: skip
    return stack_settled(settings, "e2e", ids, states, timeout_s)


def job(**params: Any) -> JobRequest:
    retry = params.pop("retry", None)
    timeout_ms = params.pop("timeout_ms", None)
    return JobRequest(job_type="data.process", owner="e2e", params=params, retry=retry,
                      timeout_ms=timeout_ms)  # fmt: skip


def test_success_retries_dead_letters_and_redrive(stack: Stack, pipeline_topics: Topics) -> None:
    settings = pipeline_topics.settings
    fast = RetryPolicy(max_attempts=2, initial_backoff_ms=500, jitter=0)
    requests = {
        "succeeds": job(),
        "retried twice": job(
            fail_until_attempt=3, retry=RetryPolicy(initial_backoff_ms=1000, jitter=0)
        ),
        "exhausted": job(fail_until_attempt=3, retry=fast),
        "non-retryable": job(non_retryable=True),
        "timed out": job(sleep_s=5, timeout_ms=500, retry=RetryPolicy(max_attempts=1)),
    }
    with JobClient(settings) as client:
        ids = dict(zip(requests, client.submit_many(requests.values()), strict=True))
    done = settled(settings, ids, {
        "succeeds": {"SUCCEEDED"}, "retried twice": {"SUCCEEDED"}, "exhausted": {"DEAD_LETTERED"},
        "non-retryable": {"DEAD_LETTERED"}, "timed out": {"DEAD_LETTERED"},
    })  # fmt: skip
    assert (done["succeeds"].attempt, done["succeeds"].result) == (1, '{"attempt":1}')
    assert (done["retried twice"].attempt, done["retried twice"].result) == (3, '{"attempt":3}')
    assert done["exhausted"].attempt == 2
    assert done["non-retryable"].attempt == 1
    assert done["timed out"].last_error is not None
    assert done["timed out"].last_error.error_type == "Timeout"

    # The backoff is observed: attempt n+1 fires no earlier than its delay after failure n.
    history = events_of(settings, ids["retried twice"])
    failures = [e["at_ms"] for e in history if e["kind"] == "FAILED"]
    fired = {e["attempt"]: e["scheduled_at_ms"] for e in history if e["kind"] == "FIRED"}
    assert len(failures) == 2
    assert fired[2] - failures[0] >= 1000
    assert fired[3] - failures[1] >= 2000

    with DlqReader(settings) as reader:
        dead = {r.job_id: r for r in reader.read(DlqFilter(owner="e2e"))}
    assert dead[ids["exhausted"]].data["reason"] == "exhausted"
    assert len(dead[ids["exhausted"]].data["errors"]) == 2
    assert dead[ids["non-retryable"]].data["reason"] == "non_retryable"

    # Redriven, the exhausted job runs its third attempt, which succeeds, under its own id.
    Redriver(settings, rate=10).redrive([dead[ids["exhausted"]]])
    again = settled(settings, {"exhausted": ids["exhausted"]}, {"exhausted": {"SUCCEEDED"}})
    assert again["exhausted"].attempt == 3


def test_the_async_client_submits_a_job_that_runs_to_succeeded(
    stack: Stack, pipeline_topics: Topics
) -> None:
    async def submit() -> str:
        async with AsyncJobClient(pipeline_topics.settings) as client:
            return await client.submit(job(via="asyncio"))

    job_id = asyncio.run(submit())
    done = settled(pipeline_topics.settings, {"async": job_id}, {"async": {"SUCCEEDED"}})
    assert (done["async"].attempt, done["async"].result) == (1, '{"attempt":1}')


def test_a_workflow_and_a_cancel_go_through_the_async_client(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    later = JobRequest(job_type="data.process", owner="e2e",
                       run_at=datetime.now(UTC) + timedelta(hours=1))  # fmt: skip
    with JobClient(settings) as client:  # cancelled by the other client: they must meet
        pending = client.submit(later)
    steps = [{"name": "first", "job_type": "data.process"},
             {"name": "then", "job_type": "data.process", "depends_on": ["first"]}]  # fmt: skip

    async def submit_and_cancel() -> WorkflowSubmission:
        async with AsyncJobClient(settings) as client:
            run = await client.submit_workflow(steps, owner="e2e")
            await client.cancel(pending, reason="not needed", requested_by="test")
            return run

    run = asyncio.run(submit_and_cancel())
    done = settled(settings, {**run.steps, "later": pending}, {
        "first": {"SUCCEEDED"}, "then": {"SUCCEEDED"}, "later": {"CANCELLED"},
    })  # fmt: skip
    cancelled = done["later"].cancellation
    assert cancelled is not None and cancelled.reason == "not needed"


def test_a_worker_killed_mid_job_loses_its_lease_and_another_finishes_it(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    spare = worker("data.process", "spare", free_base_port(1), app=APP,
                   extra=("--heartbeat", "0.5s"))  # fmt: skip
    stack.start([spare])
    with JobClient(settings) as client:
        # The first run outlasts the test, so the kill always lands mid-run.
        job_id = client.submit(
            job(first_attempt_sleep_s=600, sleep_s=1, retry=RetryPolicy(initial_backoff_ms=200))
        )
    running = settled(settings, {"long": job_id}, {"long": {"RUNNING"}})["long"]
    victim = next(name for name, (_, process) in stack.processes.items()
                  if name.startswith("worker-") and _runs(settings, job_id, name))  # fmt: skip
    stack.kill(victim)

    final = settled(settings, {"long": job_id}, {"long": {"SUCCEEDED"}}, timeout_s=150)["long"]
    assert final.attempt > running.attempt
    history = events_of(settings, job_id)
    assert [e["kind"] for e in history].count("LOST") == 1
    # Every success of an older epoch than the one applied was recorded, not applied.
    stale = [e for e in history if e["kind"] == "SUCCEEDED" and e["epoch"] < final.epoch]
    duplicates = {e["execution_id"] for e in history if e["kind"] == "DUPLICATE"}
    assert all(e["execution_id"] in duplicates for e in stale)


def _runs(settings: Settings, job_id: str, process_name: str) -> bool:
    """Whether the worker named ``process_name`` reported STARTED for the job."""
    worker_id = process_name.removeprefix("worker-")
    return any(e["kind"] == "STARTED" and e["worker_id"] == worker_id
               for e in events_of(settings, job_id))  # fmt: skip


def test_rebalances_while_jobs_run_lose_nothing(stack: Stack, pipeline_topics: Topics) -> None:
    settings = pipeline_topics.settings
    with JobClient(settings) as client:
        ids = client.submit_many([job(sleep_s=0.3, batch="rebalance") for _ in range(40)])
    labels = {f"job {i}": job_id for i, job_id in enumerate(ids)}

    def progress(count: int) -> bool:
        found = read_statuses(settings, owner="e2e")
        return sum(found[i].state == "SUCCEEDED" for i in ids if i in found) >= count

    wait_for(lambda: progress(5), timeout_s=120, what="the first jobs to finish")
    stack.start([worker("data.process", "joiner", free_base_port(1), app=APP)])  # rebalance
    wait_for(lambda: progress(15), timeout_s=120, what="more jobs to finish")
    leaver = next(name for name in stack.processes if name.startswith("worker-"))
    stack.kill(leaver, graceful=True)  # another rebalance: its running jobs drain

    done = settled(settings, labels, {key: {"SUCCEEDED"} for key in labels}, timeout_s=180)
    assert all(status.result == f'{{"attempt":{status.attempt}}}' for status in done.values())
