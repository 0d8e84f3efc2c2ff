"""A child process's print(), stderr and logging, captured per run, no broker: each run of
a child keeps its own lines, two children at once do not mix, a crash keeps what was
written before it, and the worker's own output still shows everything."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.processes import ProcessExecutor
from jobstream._pipeline.worker.runlogs import decode_lines
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.test_processes import gone
from tests.support.logs_app import LOGGER

APP = "tests.support.logs_app"
app = load_app(APP)


class Children:
    """A ProcessExecutor of the logs app, and the ends it reports."""

    def __init__(self, executor: ProcessExecutor, ends: queue.SimpleQueue[Finished]) -> None:
        self.executor, self.ends = executor, ends
        self._tokens = iter(range(1, 1_000_000))

    def submit(self, log: RunLog, job_type: str = "logs.work", **params: Any) -> int:
        token = next(self._tokens)
        record = execution_requested(job_type=job_type, params=params).data
        ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=30)
        self.executor.submit(token, app.get(job_type), ctx, log)
        return token

    def run(self, job_type: str = "logs.work", *, log: RunLog | None = None,
            **params: Any) -> tuple[Finished, list[dict[str, Any]], int]:  # fmt: skip
        """One run to its end: how it ended, its lines, how many were dropped."""
        log = RunLog() if log is None else log
        token = self.submit(log, job_type, **params)
        end = self.ends.get(timeout=60)
        assert end.token == token
        value, _, dropped = log.take()
        return end, decode_lines(value), dropped


@pytest.fixture
def children(caplog: pytest.LogCaptureFixture, child_processes: None) -> Iterator[Children]:
    caplog.set_level(logging.INFO)  # the children log at the worker's level
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor = ProcessExecutor(APP, 2, ends.put, kill_grace_s=0.5)
    yield Children(executor, ends)
    pids = executor.pids
    executor.close()
    assert all(gone(pid) for pid in pids)


def shown(lines: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(line["logger"], line["level"], line["msg"]) for line in lines]


def test_print_stderr_and_logging_of_each_run_are_its_own(
    children: Children, capfd: pytest.CaptureFixture[str]
) -> None:
    end, lines, dropped = children.run(lines=["read 3 rows"], prints=["printed"],
                                       errors=["to stderr"])  # fmt: skip
    assert end.error is None and dropped == 0
    assert sorted(shown(lines)) == sorted([
        (LOGGER, "INFO", "read 3 rows (attempt 1)"), ("stdout", "INFO", "printed (attempt 1)"),
        ("stderr", "ERROR", "to stderr (attempt 1)")])  # fmt: skip
    assert all(isinstance(line["at_ms"], int) for line in lines)
    pid = children.executor.pids[0]

    end, lines, _ = children.run(lines=["second run"], prints=["printed again"],
                                 fail_until_attempt=2)  # fmt: skip
    assert children.executor.pids[0] == pid, "the same child ran both"
    assert end.error is not None and end.error.message == "attempt 1 fails"
    assert sorted(shown(lines)) == sorted([  # nothing of the first run, nor of the child's own
        (LOGGER, "INFO", "second run (attempt 1)"), (LOGGER, "ERROR", "giving up attempt 1"),
        ("stdout", "INFO", "printed again (attempt 1)")])  # fmt: skip
    (failure,) = [line for line in lines if line["level"] == "ERROR"]
    assert failure["exc"].startswith("Traceback (most recent call last)")
    assert failure["exc"].endswith("Flaky: attempt 1 fails")

    out, err = capfd.readouterr()  # the worker's own output shows it all, as it did
    assert "printed (attempt 1)" in out and "printed again (attempt 1)" in out
    assert "to stderr (attempt 1)" in err
    logged = [orjson.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(r["logger"], r["level"], r["msg"]) for r in logged if r["logger"] == LOGGER] == [
        (LOGGER, "info", "read 3 rows (attempt 1)"), (LOGGER, "info", "second run (attempt 1)"),
        (LOGGER, "error", "giving up attempt 1")], "the worker's log, as before"
    assert logged[-1]["exc"] == failure["exc"]


def test_two_children_at_once_keep_their_own_lines(children: Children) -> None:
    first, second = RunLog(), RunLog()
    children.submit(first, lines=["A"], prints=["A"], sleep_s=0.5)
    children.submit(second, lines=["B"], prints=["B"], sleep_s=0.5)
    ends = [children.ends.get(timeout=60), children.ends.get(timeout=60)]
    assert all(end.error is None for end in ends)
    assert len(set(children.executor.pids)) == 2, "two children ran them"
    for log, name in ((first, "A"), (second, "B")):
        lines = decode_lines(log.take()[0])
        assert sorted(line["msg"] for line in lines) == [f"{name} (attempt 1)"] * 2


def test_a_crash_keeps_the_lines_written_before_it(children: Children) -> None:
    end, lines, _ = children.run(lines=["about to crash"], prints=["printed before"],
                                 errors=["last words"], signal="SIGKILL")  # fmt: skip
    assert end.error is not None and end.error.error_type == "WorkerCrashed"
    assert sorted(shown(lines)) == sorted([
        (LOGGER, "INFO", "about to crash (attempt 1)"),
        ("stdout", "INFO", "printed before (attempt 1)"),
        ("stderr", "ERROR", "last words (attempt 1)")])  # fmt: skip
    end, lines, _ = children.run(lines=["on the new child"])
    assert end.error is None and shown(lines) == [(LOGGER, "INFO", "on the new child (attempt 1)")]


def test_a_childs_lines_past_the_bounds_are_counted(children: Children) -> None:
    end, lines, dropped = children.run(log=RunLog(max_lines=10), bulk=50)
    assert end.error is None
    assert [line["msg"] for line in lines] == [f"bulk line {i}" for i in range(10)]
    assert dropped == 40
