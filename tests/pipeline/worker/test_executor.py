"""Handlers run off the polling thread: results, errors and async timeouts, no broker."""

from __future__ import annotations

import asyncio
import queue
import threading

import pytest

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.executor import AsyncRun, Finished, JobExecutor
from tests.pipeline.worker.executions import execution_requested

app = WorkerApp()
release = threading.Event()
slow_began = threading.Event()


@app.handler("ok")
def ok(ctx: JobContext) -> dict:
    return {"n": ctx.params["n"]}


@app.handler("big")
def big(ctx: JobContext) -> bytes:
    return b"\x01" * 10


@app.handler("fails")
def fails(ctx: JobContext) -> None:
    raise NonRetryableError("never")


@app.handler("exits")
def exits(ctx: JobContext) -> None:
    raise SystemExit(3)


@app.handler("async.ok")
async def async_ok(ctx: JobContext) -> str:
    await asyncio.sleep(0)
    return "fine"


@app.handler("async.slow")
async def async_slow(ctx: JobContext) -> None:
    slow_began.set()
    await asyncio.sleep(60)


@app.handler("async.blocks_the_loop")
async def async_blocks_the_loop(ctx: JobContext) -> None:
    release.wait(30)  # what a handler must not do: it holds every async job back


@app.handler("async.own_timeout")
async def async_own_timeout(ctx: JobContext) -> None:
    raise TimeoutError("the service I called timed out")


def run(runner: tuple[JobExecutor, queue.SimpleQueue[Finished]], job_type: str) -> Finished:
    executor, ends = runner
    record = execution_requested(job_type=job_type, params={"n": 4}).data
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=30)  # fmt: skip
    started = executor.submit(7, app.get(job_type), ctx)
    if job_type == "async.slow":  # time it out once it runs, as the runtime would
        assert started is not None and slow_began.wait(30)
        started.cancel(timed_out=True)
    end = ends.get(timeout=30)
    assert end.token == 7
    return end


def test_sync_and_async_results(runner: tuple[JobExecutor, queue.SimpleQueue[Finished]]) -> None:
    end = run(runner, "ok")
    assert end.result is not None and end.result.inline == '{"n":4}'
    end = run(runner, "async.ok")
    assert end.result is not None and end.result.inline == '"fine"'
    end = run(runner, "big")
    assert end.result is not None and end.result.inline is None


def test_errors_are_described_where_they_are_caught(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    end = run(runner, "fails")
    assert end.error is not None and end.error.retryable is False
    assert "fails" in (end.error.traceback or "")
    end = run(runner, "exits")
    assert end.error is not None and end.error.error_type == "SystemExit"


def test_an_async_run_cancelled_for_its_timeout_ends_timed_out(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    end = run(runner, "async.slow")
    assert end.timed_out and not end.cancelled and end.error is None


def test_a_handlers_own_timeout_error_is_a_failure_not_a_timeout(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    end = run(runner, "async.own_timeout")
    assert not end.timed_out and end.error is not None
    assert end.error.error_type == "TimeoutError"


def submit(runner: tuple[JobExecutor, queue.SimpleQueue[Finished]], token: int,
           job_type: str) -> AsyncRun | None:  # fmt: skip
    record = execution_requested(job_type=job_type, params={"n": token}).data
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=30)  # fmt: skip
    return runner[0].submit(token, app.get(job_type), ctx)


def test_a_burst_of_async_runs_all_report(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    for token in range(1, 201):
        submit(runner, token, "async.ok")
    ends = [runner[1].get(timeout=30) for _ in range(200)]
    assert sorted(end.token for end in ends) == list(range(1, 201))
    assert all(end.result is not None and end.result.inline == '"fine"' for end in ends)


def test_an_async_run_cancelled_before_it_began_is_reported_cancelled(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    release.clear()
    try:
        submit(runner, 1, "async.blocks_the_loop")
        waiting = submit(runner, 2, "async.ok")
        assert waiting is not None
        waiting.cancel()  # the loop is blocked: run 2 has not begun
        timing_out = submit(runner, 3, "async.ok")
        assert timing_out is not None
        timing_out.cancel(timed_out=True)
    finally:
        release.set()
    ends = {end.token: end for end in (runner[1].get(timeout=30) for _ in range(3))}
    assert ends[2].cancelled, "its slot is freed although its body never ran"
    assert ends[3].timed_out and not ends[3].cancelled
    assert ends[1].result is not None


started_at: dict[str, int] = {}


@app.handler("stamps")
def stamps(ctx: JobContext) -> None:
    started_at[ctx.execution_id] = now_ms()


@app.handler("async.stamps")
async def async_stamps(ctx: JobContext) -> None:
    started_at[ctx.execution_id] = now_ms()


@pytest.mark.parametrize("job_type", ["stamps", "async.stamps"])
def test_a_run_claimed_ahead_starts_on_its_instant_not_before(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]], job_type: str
) -> None:
    due = now_ms() + 300
    record = execution_requested(job_type=job_type, due_ms=due).data
    ctx = build_context(record, worker_id="w", started_ms=due, timeout_s=30)
    runner[0].submit(9, app.get(job_type), ctx)
    end = runner[1].get(timeout=30)
    assert end.token == 9 and end.result is not None
    assert started_at[record.execution_id] >= due


@pytest.mark.parametrize("job_type", ["stamps", "async.stamps"])
def test_a_cancel_before_the_instant_ends_the_run_before_its_handler(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]], job_type: str
) -> None:
    record = execution_requested(job_type=job_type, due_ms=now_ms() + 500).data
    ctx = build_context(record, worker_id="w", started_ms=record.scheduled_at_ms, timeout_s=30)
    handle = runner[0].submit(10, app.get(job_type), ctx)
    ctx.cancel_signal.set()  # as the loop stops a run: the signal, and an async run's cancel
    if handle is not None:
        handle.cancel()
    end = runner[1].get(timeout=10)
    assert end.token == 10 and end.cancelled and end.result is None
    assert record.execution_id not in started_at
