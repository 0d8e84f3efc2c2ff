"""Each run's log lines, captured on threads and on the event loop, no broker: runs at once
keep their own lines, the worker's own lines are no run's, the bounds keep the head."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobstream._pipeline.logs import configure_logging
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.capture import FIELD_CHARS, RunLog, capturing, install
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.runlogs import (
    DROPPED_HEADER,
    decode_lines,
    format_line,
    logs_record,
)
from tests.pipeline.worker.executions import execution_requested

LOGGER = "tests.capture"
log = logging.getLogger(LOGGER)
worker_log = logging.getLogger("jobstream._pipeline.worker.loop")
app = WorkerApp()
turns = threading.Barrier(2, timeout=10)
"""Both thread runs log a line, then wait for each other: their lines interleave."""
order: list[str] = []
"""Every line the handlers logged, in the order they were logged across runs."""
gate = threading.Event()


@app.handler("lines")
def lines(ctx: JobContext) -> None:
    for i in range(5):
        log.info("%s line %d", ctx.params["name"], i)
        order.append(ctx.params["name"])
        turns.wait()


@app.handler("lines.async")
async def lines_async(ctx: JobContext) -> None:
    for i in range(5):
        log.info("%s line %d", ctx.params["name"], i)
        order.append(ctx.params["name"])
        await asyncio.sleep(0)  # the other run's turn
        for _ in range(500):  # the other run may start later on a busy machine: wait for it
            if len(set(order)) == 2:
                break
            await asyncio.sleep(0.01)
    await asyncio.to_thread(log.info, "%s from a thread of its own", ctx.params["name"])


@app.handler("mixed")
def mixed(ctx: JobContext) -> None:
    log.info("the handler's line")
    worker_log.warning("a worker line, on the handler's thread")
    gate.wait(10)
    try:
        raise ValueError("bad row 7")
    except ValueError:
        log.exception("row failed")


@pytest.fixture(autouse=True)
def info_level() -> Iterator[None]:
    """The handlers' logger at INFO whatever the root's level is under pytest."""
    before = log.level
    log.setLevel(logging.INFO)
    order.clear()
    yield
    log.setLevel(before)


def start(executor: JobExecutor, token: int, job_type: str, **params: Any) -> RunLog:
    record = execution_requested(job_type=job_type, params=params).data
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=30)
    run = RunLog()
    executor.submit(token, app.get(job_type), ctx, run)
    return run


def ended(ends: queue.SimpleQueue[Finished], count: int) -> dict[int, Finished]:
    found = {}
    for _ in range(count):
        end = ends.get(timeout=30)
        found[end.token] = end
    return found


def messages(run: RunLog) -> list[str]:
    value, _, _ = run.take()
    return [line["msg"] for line in decode_lines(value)]


@pytest.mark.parametrize("job_type", ["lines", "lines.async"])
def test_two_runs_at_once_keep_their_own_lines(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]], job_type: str
) -> None:
    running, ends = runner
    first, second = start(running, 1, job_type, name="A"), start(running, 2, job_type, name="B")
    outcomes = ended(ends, 2)
    assert all(end.error is None for end in outcomes.values()), outcomes
    assert order.index("B") < len(order) - order[::-1].index("A") - 1, (
        f"the runs did not interleave: {order}"
    )  # else the test could not tell a mix-up
    expected = {"A": [f"A line {i}" for i in range(5)], "B": [f"B line {i}" for i in range(5)]}
    if job_type == "lines.async":  # asyncio.to_thread runs in a copy of the run's context
        for name in expected:
            expected[name].append(f"{name} from a thread of its own")
    assert messages(first) == expected["A"]
    assert messages(second) == expected["B"]


def test_the_workers_own_lines_are_no_runs(
    runner: tuple[JobExecutor, queue.SimpleQueue[Finished]],
) -> None:
    running, ends = runner
    gate.clear()
    run = start(running, 1, "mixed")
    worker_log.warning("a worker line, on the worker's thread, while the run goes on")
    log.warning("a line of the handler's logger, on the worker's thread")
    gate.set()
    ended(ends, 1)
    value, count, dropped = run.take()
    found = decode_lines(value)
    assert [line["msg"] for line in found] == ["the handler's line", "row failed"]
    assert (count, dropped) == (2, 0)
    assert found[0]["level"] == "INFO" and found[0]["logger"] == LOGGER
    assert isinstance(found[0]["at_ms"], int)
    assert found[1]["level"] == "ERROR"
    assert found[1]["exc"].startswith("Traceback (most recent call last)")
    assert found[1]["exc"].endswith("ValueError: bad row 7")


def test_the_capture_outlives_a_new_logging_set_up() -> None:
    install()
    configure_logging("INFO")  # replaces the root logger's handlers
    run = RunLog()
    with capturing(run):
        install()  # as every run's start does
        log.info("after the set-up")
    assert messages(run) == ["after the set-up"]


def test_lines_past_the_bounds_are_dropped_and_counted_keeping_the_head() -> None:
    by_lines = RunLog(max_lines=3)
    for i in range(5):
        by_lines.add({"msg": f"line {i}"})
    value, count, dropped = by_lines.take()
    assert [line["msg"] for line in decode_lines(value)] == ["line 0", "line 1", "line 2"]
    assert (count, dropped) == (3, 2)

    line_bytes = len(orjson.dumps({"msg": "x" * 100})) + 1
    by_bytes = RunLog(max_bytes=2 * line_bytes + 10)
    by_bytes.add({"msg": "x" * 100})
    by_bytes.add({"msg": "y" * 100})
    by_bytes.add({"msg": "z" * 100})  # over the bytes
    by_bytes.add({"msg": "short"})  # would fit, but the head ended at the cut
    value, count, dropped = by_bytes.take()
    assert len(value) == 2 * line_bytes
    assert (count, dropped) == (2, 2)
    by_bytes.add({"msg": "after the run ended"})
    assert by_bytes.dropped == 2, "taken: nothing more counts"


def test_a_huge_message_is_cut_not_the_whole_log() -> None:
    run = RunLog()
    with capturing(run):
        install()
        log.info("%s", "m" * (FIELD_CHARS + 500))
        log.info("the next line")
    found = decode_lines(run.take()[0])
    assert found[0]["msg"] == "m" * FIELD_CHARS + " [500 characters cut]"
    assert found[1]["msg"] == "the next line"


def test_the_record_on_jobs_logs_names_the_run_and_what_was_dropped() -> None:
    execution = execution_requested(attempt=2).data
    run = RunLog(max_lines=1)
    run.add({"at_ms": 1, "level": "INFO", "logger": "x", "msg": "kept"})
    run.add({"at_ms": 2, "level": "INFO", "logger": "x", "msg": "dropped"})
    (key, value, headers), kept = logs_record(run, execution)
    assert kept == 1
    assert key == execution["job_id"].encode()
    assert dict(headers) == {"execution-id": execution["execution_id"].encode(),
                             "attempt": b"2", DROPPED_HEADER: b"1"}  # fmt: skip
    assert decode_lines(value) == [{"at_ms": 1, "level": "INFO", "logger": "x", "msg": "kept"}]
    assert decode_lines(b"plain text\n\n") == [{"msg": "plain text"}]


def test_a_run_that_kept_and_dropped_no_line_has_no_record() -> None:
    execution = execution_requested().data
    assert logs_record(RunLog(), execution) == (None, 0)
    only_dropped = RunLog(max_lines=0)
    only_dropped.add({"at_ms": 1, "level": "INFO", "logger": "x", "msg": "dropped"})
    record, told = logs_record(only_dropped, execution)
    assert record is not None and dict(record[2])[DROPPED_HEADER] == b"1"
    assert told is None, "0 would tell readers there is no record"


def test_jobstream_logs_prints_a_line_with_its_time_level_logger_and_traceback() -> None:
    line = {"at_ms": 1_767_225_600_123, "level": "ERROR", "logger": "app.jobs", "msg": "failed",
            "exc": "Traceback (most recent call last):\nValueError: x"}  # fmt: skip
    assert format_line(line) == ("2026-01-01 00:00:00.123 ERROR   app.jobs: failed\n"
                                 "Traceback (most recent call last):\nValueError: x")  # fmt: skip
    assert format_line({"msg": "from another client"}) == "- -       -: from another client"
