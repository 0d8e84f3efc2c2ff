"""The worker loop against the real broker: outcomes, results, errors, timeouts, beats."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import orjson

from pipeline.errors import NonRetryableError
from pipeline.model.records import evolve
from pipeline.serde import Event
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker, committed_offsets
from tests.support.reader import results_of
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


def test_large_and_bytes_results_go_to_the_results_topic(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def produce_result(ctx: JobContext) -> object:
        return "x" * 300_000 if ctx.params["kind"] == "large" else b"\x89PNG raw"

    large, raw = submit(topics, execution_requested(params={"kind": "large"}),
                        execution_requested(params={"kind": "bytes"}))  # fmt: skip
    start_worker(app)

    for execution_id, expected, content_type in (
        (large, orjson.dumps("x" * 300_000), "application/json"),
        (raw, b"\x89PNG raw", "application/octet-stream"),
    ):
        job_id = execution_id.split(":")[0]
        done = events.wait(execution_id, "SUCCEEDED")[0]
        assert done["result"] is None
        assert done["result_uri"] == f"kafka://{topics.results}/{job_id}"
        ((value, headers),) = results_of(topics.settings, job_id)
        assert value == expected
        assert headers == {"content-type": content_type, "execution-id": execution_id,
                           "attempt": "1"}  # fmt: skip


def test_a_result_over_the_limit_fails_the_run_naming_the_limit(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def too_much(ctx: JobContext) -> bytes:
        return b"\x00" * (topics.settings.max_result_bytes + 1)

    (execution_id,) = submit(topics, execution_requested())
    start_worker(app)
    failed = events.wait(execution_id, "FAILED")[0]["error"]
    assert failed["error_type"] == "pipeline.worker.results.ResultTooLargeError"
    assert failed["retryable"] is False
    assert "over the limit of 1,048,576 bytes" in failed["message"]


def test_failures_carry_the_error_its_retryability_and_the_execution(
    topics: Topics, start_worker: StartWorker, events: EventLog
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
    submit(topics, transient, permanent, bad_params)
    start_worker(app)

    failed = events.wait(transient.data["execution_id"], "FAILED")[0]
    assert failed["error"]["error_type"] == "ConnectionError"
    assert failed["error"]["retryable"] is True
    assert failed["error"]["message"] == "database unreachable"
    assert 'raise ConnectionError("database unreachable")' in failed["error"]["traceback"]
    assert failed["execution"] == transient.data
    failed = events.wait(permanent.data["execution_id"], "FAILED")[0]
    assert failed["error"]["error_type"] == "pipeline.errors.NonRetryableError"
    assert failed["error"]["retryable"] is False
    failed = events.wait(bad_params.data["execution_id"], "FAILED")[0]
    assert failed["error"]["retryable"] is False and "spec.params" in failed["error"]["message"]
    assert events.kinds(bad_params.data["execution_id"]) == ["FAILED"], "never started"


def test_a_timed_out_sync_handler_is_reported_and_holds_its_slot_until_it_returns(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process", timeout_s=0.5)
    def slow(ctx: JobContext) -> str:
        if ctx.params.get("stuck"):
            gate.wait(120)
        return "late"

    (stuck,) = submit(topics, execution_requested(params={"stuck": True}))
    worker = start_worker(app, concurrency=1)
    events.wait(stuck, "STARTED")
    (quick,) = submit(topics, execution_requested())

    late = events.wait(stuck, "TIMED_OUT")[0]
    assert late["error"]["error_type"] == "Timeout" and late["error"]["retryable"] is True
    assert late["execution"]["execution_id"] == stuck
    wait_for(lambda: worker.runtime.stats.buffered.get("normal") == 1, timeout_s=30,
             what="the second job to wait in the buffer")  # fmt: skip
    assert worker.runtime.stats.running == 1, "the stuck thread still holds the only slot"
    assert worker.runtime.stats.started == 1
    gate.set()
    events.wait(quick, "SUCCEEDED")
    events.catch_up()
    assert events.kinds(stuck) == ["STARTED", "TIMED_OUT"], "the late result is ignored"


def test_an_async_handler_is_cancelled_at_its_timeout(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    cancelled = threading.Event()

    @app.handler("image.render")
    async def hang(ctx: JobContext) -> None:
        try:
            await asyncio.sleep(120)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    (execution_id,) = submit(topics, execution_requested(job_type="image.render",
                                                         timeout_ms=500))  # fmt: skip
    start_worker(app)
    late = events.wait(execution_id, "TIMED_OUT")[0]
    assert "0.5 s" in late["error"]["message"]
    wait_for(cancelled.is_set, timeout_s=10, what="the coroutine to be cancelled")


def test_an_async_handler_that_ignores_its_cancellation_times_out_after_the_grace(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("image.render")
    async def stubborn(ctx: JobContext) -> str:
        while not gate.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)
        return "late"

    (execution_id,) = submit(topics, execution_requested(job_type="image.render",
                                                         timeout_ms=300))  # fmt: skip
    worker = start_worker(app, async_grace_s=0.5)
    late = events.wait(execution_id, "TIMED_OUT")[0]
    assert late["at_ms"] - events.of(execution_id, "STARTED")[0]["at_ms"] >= 800
    assert worker.runtime.stats.running == 1, "the coroutine still holds its slot"
    gate.set()
    wait_for(lambda: worker.runtime.stats.running == 0, timeout_s=30, what="the slot freed")
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED", "TIMED_OUT"], "the late result is ignored"


def test_a_running_job_heartbeats(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event,
    gated_app: WorkerApp,
) -> None:  # fmt: skip
    (execution_id,) = submit(topics, execution_requested())
    start_worker(gated_app, heartbeat_s=0.5)
    beats = events.wait(execution_id, "HEARTBEAT", count=2)
    assert {b["worker_id"] for b in beats} == {"test-worker-0"}
    assert beats[1]["at_ms"] - beats[0]["at_ms"] >= 400
    gate.set()
    events.wait(execution_id, "SUCCEEDED")
    kinds = events.kinds(execution_id)
    assert kinds[0] == "STARTED" and kinds[-1] == "SUCCEEDED"


def test_a_record_is_claimed_before_its_handler_runs_and_claims_carry_the_outcomes(
    topics: Topics, start_worker: StartWorker, events: EventLog, quick_app: WorkerApp,
    gate: threading.Event,
) -> None:  # fmt: skip
    app = WorkerApp()

    @app.handler("data.process")
    def wait_for_gate(ctx: JobContext) -> str:
        gate.wait(60)
        return "done"

    (blocked,) = submit(topics, execution_requested())
    start_worker(app, worker_id="claims", concurrency=1)
    events.wait(blocked, "STARTED")
    assert committed_offsets(topics.settings, "data.process") == 1, "claimed while it runs"
    gate.set()
    events.wait(blocked, "SUCCEEDED")

    ids = submit(topics, *(execution_requested() for _ in range(40)))
    worker = start_worker(quick_app, worker_id="quick", concurrency=2)
    wait_for(lambda: committed_offsets(topics.settings, "data.process") == 41, timeout_s=60,
             what="every offset committed")  # fmt: skip
    events.wait(ids[-1], "SUCCEEDED")
    events.catch_up()
    assert all(events.kinds(execution_id) == ["STARTED", "SUCCEEDED"] for execution_id in ids)
    transactions = worker.runtime.lanes[0].tx.transactions
    assert transactions <= 42, f"{transactions} transactions for 40 claims and 40 outcomes"


def test_the_outcome_of_a_workflows_job_commits_without_waiting_for_the_interval(
    topics: Topics, start_worker: StartWorker, events: EventLog, quick_app: WorkerApp
) -> None:
    worker = start_worker(quick_app, concurrency=2, commit_interval_s=120.0)
    [lone] = submit(topics, execution_requested())
    events.wait(lone, "STARTED")
    lane = worker.runtime.lanes[0]
    wait_for(lambda: lane.tx.transactions >= 1, timeout_s=60, what="a first transaction")
    # From here on a plain outcome waits 120 s for the next transaction.
    step = execution_requested()
    [in_workflow] = submit(topics, Event.of(evolve(step.data, workflow_id="wf-1")))
    [succeeded] = events.wait(in_workflow, "SUCCEEDED", timeout_s=30)
    assert succeeded["workflow_id"] == "wf-1"
    assert events.kinds(lone) == ["STARTED", "SUCCEEDED"], "it went in the same transaction"
