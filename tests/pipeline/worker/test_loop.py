"""The worker loop: outcomes, results, errors, timeouts, beats and claims, on the driver
(no broker), and one run end to end against the real broker."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import orjson

from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.model.records import evolve
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import DriveWorker, EventLog, StartWorker, committed_offsets
from tests.support.waiting import wait_for


def test_sync_and_async_handlers_report_started_then_succeeded(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def process(ctx: JobContext) -> dict:
        return {"sum": sum(ctx.params["numbers"]), "attempt": ctx.attempt}

    @app.handler("image.render")
    async def render(ctx: JobContext) -> str:
        await asyncio.sleep(0.01)
        return f"rendered {ctx.params['name']}"

    sync_job = execution_requested(params={"numbers": [1, 2, 3]})
    async_job = execution_requested(job_type="image.render", params={"name": "cat"},
                                    priority="HIGH")  # fmt: skip
    sync_id, async_id = submit(topics, sync_job, async_job)
    start_worker(app)

    done = events.wait(sync_id, "SUCCEEDED")[0]
    assert orjson.loads(done["result"]) == {"sum": 6, "attempt": 1}
    assert done["result_uri"] is None and done["worker_id"] == "test-worker-0"
    assert events.kinds(sync_id) == ["STARTED", "SUCCEEDED"]
    started = events.of(sync_id, "STARTED")[0]
    assert started["execution"] == sync_job.data
    assert (started["attempt"], started["epoch"]) == (1, sync_job.data["epoch"])
    assert orjson.loads(events.wait(async_id, "SUCCEEDED")[0]["result"]) == "rendered cat"
    wait_for(lambda: committed_offsets(topics.settings, "data.process") == 1
             and committed_offsets(topics.settings, "image.render") == 1,
             timeout_s=30, what="both offsets committed")  # fmt: skip


def _results(driver: WorkerDriver, job_id: str) -> list[tuple[bytes, dict[str, str]]]:
    """The records of ``job_id`` on jobs.results, as (value, headers)."""
    return [(m.value() or b"", {k: v.decode() for k, v in m.headers() or ()})
            for m in driver.broker.records(driver.topics.results)
            if m.key() == job_id.encode()]  # fmt: skip


def _wait(driver: WorkerDriver, execution_id: str, kind: str) -> list[Any]:
    driver.run_until(lambda: driver.events(execution_id, kind), what=f"{kind} of {execution_id}")
    return driver.events(execution_id, kind)


def test_large_and_bytes_results_go_to_the_results_topic(drive: DriveWorker) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def produce_result(ctx: JobContext) -> object:
        return "x" * 300_000 if ctx.params["kind"] == "large" else b"\x89PNG raw"

    driver = drive(app)
    large, raw = driver.fire(execution_requested(params={"kind": "large"}),
                             execution_requested(params={"kind": "bytes"}))  # fmt: skip
    for execution_id, expected, content_type in (
        (large, orjson.dumps("x" * 300_000), "application/json"),
        (raw, b"\x89PNG raw", "application/octet-stream"),
    ):
        job_id = execution_id.split(":")[0]
        done = _wait(driver, execution_id, "SUCCEEDED")[0]
        assert done["result"] is None
        assert done["result_uri"] == f"kafka://{driver.topics.results}/{job_id}"
        ((value, headers),) = _results(driver, job_id)
        assert value == expected
        assert headers == {"content-type": content_type, "execution-id": execution_id,
                           "attempt": "1"}  # fmt: skip


def test_a_result_over_the_limit_fails_the_run_naming_the_limit(drive: DriveWorker) -> None:
    app = WorkerApp()
    driver: list[WorkerDriver] = []

    @app.handler("data.process")
    def too_much(ctx: JobContext) -> bytes:
        return b"\x00" * (driver[0].settings.max_result_bytes + 1)

    driver.append(drive(app))
    (execution_id,) = driver[0].fire(execution_requested())
    failed = _wait(driver[0], execution_id, "FAILED")[0]["error"]
    assert failed["error_type"] == "jobstream._pipeline.worker.results.ResultTooLargeError"
    assert failed["retryable"] is False
    assert "over the limit of 1,048,576 bytes" in failed["message"]


def test_failures_carry_the_error_its_retryability_and_the_execution(
    drive: DriveWorker,
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def fail(ctx: JobContext) -> None:
        if ctx.params["how"] == "transient":
            raise ConnectionError("database unreachable")
        raise NonRetryableError("the input file is corrupt")

    transient = execution_requested(params={"how": "transient"})
    permanent = execution_requested(params={"how": "permanent"})
    bad_params = execution_requested(raw_params="[1]")
    driver = drive(app)
    driver.fire(transient, permanent, bad_params)

    failed = _wait(driver, transient.data["execution_id"], "FAILED")[0]
    assert failed["error"]["error_type"] == "ConnectionError"
    assert failed["error"]["retryable"] is True
    assert failed["error"]["message"] == "database unreachable"
    assert 'raise ConnectionError("database unreachable")' in failed["error"]["traceback"]
    assert failed["execution"] == transient.data
    failed = _wait(driver, permanent.data["execution_id"], "FAILED")[0]
    assert failed["error"]["error_type"] == "jobstream._pipeline.errors.NonRetryableError"
    assert failed["error"]["retryable"] is False
    failed = _wait(driver, bad_params.data["execution_id"], "FAILED")[0]
    assert failed["error"]["retryable"] is False and "spec.params" in failed["error"]["message"]
    assert driver.kinds(bad_params.data["execution_id"]) == ["FAILED"], "never started"


def test_an_async_handler_that_ignores_its_cancellation_times_out_after_the_grace(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    began = threading.Event()

    @app.handler("image.render")
    async def stubborn(ctx: JobContext) -> str:
        began.set()
        while not gate.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.01)
        return "late"

    driver = drive(app, async_grace_s=0.5)
    (execution_id,) = driver.fire(execution_requested(job_type="image.render", timeout_ms=300))
    driver.step()
    driver.run_until(began.is_set, what="the coroutine to begin")
    driver.advance(300)
    driver.advance(499)
    assert driver.kinds(execution_id) == ["STARTED"], "cancelled, within its grace"
    driver.advance(1)
    late = driver.events(execution_id, "TIMED_OUT")[0]
    assert late["at_ms"] - driver.events(execution_id, "STARTED")[0]["at_ms"] == 800
    assert driver.loop.stats.running == 1, "the coroutine still holds its slot"
    gate.set()
    driver.run_until(lambda: driver.loop.stats.running == 0, what="the slot freed")
    assert driver.kinds(execution_id) == ["STARTED", "TIMED_OUT"], "the late result is ignored"


def test_claims_carry_the_outcomes(drive: DriveWorker, quick_app: WorkerApp) -> None:
    driver = drive(quick_app, worker_id="quick", concurrency=2)
    ids = driver.fire(*(execution_requested() for _ in range(40)))
    driver.run_until(lambda: driver.committed() == 40
                     and all(driver.events(e, "SUCCEEDED") for e in ids),
                     what="every run's end, every offset committed")  # fmt: skip
    assert all(driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"] for execution_id in ids)
    transactions = driver.loop.lanes[0].tx.transactions
    assert transactions <= 41, f"{transactions} transactions for 40 claims and 40 outcomes"


def test_the_outcome_of_a_workflows_job_commits_without_waiting_for_the_interval(
    drive: DriveWorker, quick_app: WorkerApp
) -> None:
    driver = drive(quick_app, concurrency=2, commit_interval_s=120.0)
    [lone] = driver.fire(execution_requested())
    driver.run_until(lambda: driver.loop.stats.succeeded == 1, what="the first run's end")
    assert driver.kinds(lone) == ["STARTED"], "a plain outcome waits for the interval"
    step = execution_requested()
    [in_workflow] = driver.fire(Event.of(evolve(step.data, workflow_id="wf-1")))
    [succeeded] = _wait(driver, in_workflow, "SUCCEEDED")
    assert succeeded["workflow_id"] == "wf-1"
    assert driver.kinds(lone) == ["STARTED", "SUCCEEDED"], "it went in the same transaction"
