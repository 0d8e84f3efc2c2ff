"""Handlers in child processes, no broker: crashes, kills at the deadline, reuse, no orphans."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.worker import WorkerApp
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.child import LIFELINE_GRACE_S
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.launched import LaunchStamp
from jobstream._pipeline.worker.processes import ProcessExecutor
from tests.pipeline.worker.executions import execution_requested
from tests.support.waiting import wait_for

APP = "tests.support.isolation_app"
ROOT = Path(__file__).resolve().parents[3]
app = load_app(APP)


class Pool:
    """A ProcessExecutor and the ends it reports."""

    def __init__(self, executor: ProcessExecutor, ends: queue.SimpleQueue[Finished]) -> None:
        self.executor, self.ends = executor, ends
        self._tokens = iter(range(1, 1_000_000))

    def submit(self, job_type: str = "iso.work", **params: Any) -> int:
        token = next(self._tokens)
        record = execution_requested(job_type=job_type, params=params).data
        ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=30)  # fmt: skip
        self.executor.submit(token, app.get(job_type), ctx)
        return token

    def end(self, token: int) -> Finished:
        end = self.ends.get(timeout=60)
        assert end.token == token
        return end

    def run(self, job_type: str = "iso.work", **params: Any) -> Finished:
        return self.end(self.submit(job_type, **params))


def answer(end: Finished) -> dict[str, Any]:
    assert end.result is not None and end.result.inline is not None, end
    result: dict[str, Any] = orjson.loads(end.result.inline)
    return result


def gone(pid: int) -> bool:
    """No such process, or only its zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


@pytest.fixture
def pool(child_processes: None) -> Iterator[Pool]:
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor = ProcessExecutor(APP, 2, ends.put, max_result_bytes=1000, kill_grace_s=0.5)
    yield Pool(executor, ends)
    pids = executor.pids
    executor.close()
    assert all(gone(pid) for pid in pids), "close() leaves no child"


def test_results_sync_async_and_large_come_back_from_a_child(pool: Pool) -> None:
    done = answer(pool.run(n=1))
    assert done["n"] == 1 and done["pid"] != os.getpid()
    assert answer(pool.run("iso.async", n=2)) == {"pid": done["pid"], "n": 2}
    raw = pool.run(bytes=10)
    assert raw.result is not None and raw.result.body == b"\x01" * 10, "its bytes crossed the pipe"
    assert raw.result.inline is None
    over = pool.run(bytes=1001)  # the pool's limit is 1,000 bytes
    assert over.error is not None and over.error.retryable is False
    assert over.error.error_type == "jobstream._pipeline.worker.results.ResultTooLargeError"
    assert "limit of 1,000 bytes" in over.error.message


def test_a_child_tells_when_its_handler_began_on_the_runs_instant(pool: Pool) -> None:
    """A run submitted 300 ms ahead of its instant (claimed ahead) begins on it, in the
    child: the stamp says when, by the child's clock (the worker's host), before its end."""
    due = now_ms() + 300
    record = execution_requested(job_type="iso.work", params={"n": 1}, due_ms=due).data
    ctx = build_context(record, worker_id="w", started_ms=due, timeout_s=30)
    stamp = LaunchStamp()
    pool.executor.submit(1, app.get("iso.work"), ctx, None, stamp)
    end = pool.end(1)
    assert stamp.at_ms is not None and due <= stamp.at_ms <= end.at_ms
    answer(end)


def test_a_run_going_on_has_its_begin_told_before_its_end(pool: Pool) -> None:
    """A short run tells its begin with its end (no message more); one going on tells it
    within moments, so the worker's HEARTBEATs carry it while it runs."""
    record = execution_requested(job_type="iso.work", params={"sleep_s": 3}).data
    ctx = build_context(record, worker_id="w", started_ms=now_ms(), timeout_s=30)
    stamp, submitted = LaunchStamp(), now_ms()
    pool.executor.submit(2, app.get("iso.work"), ctx, None, stamp)
    wait_for(lambda: stamp.at_ms is not None, timeout_s=2.5, what="the begin told")
    assert pool.ends.empty(), "told while the run goes on"
    assert stamp.at_ms is not None and submitted <= stamp.at_ms
    end = pool.end(2)
    assert stamp.at_ms <= end.at_ms - 2900


def test_an_exception_is_a_failure_described_in_the_child(pool: Pool) -> None:
    end = pool.run(**{"raise": "bad row"})
    assert end.error is not None
    assert (end.error.error_type, end.error.message, end.error.retryable) == (
        "ValueError", "bad row", True)  # fmt: skip
    assert 'raise ValueError(params["raise"])' in (end.error.traceback or "")


@pytest.mark.parametrize(("params", "how"), [
    ({"signal": "SIGKILL"}, "was killed by signal SIGKILL"),
    ({"signal": "SIGSEGV"}, "was killed by signal SIGSEGV"),
    ({"exit_code": 3}, "exited with code 3"),
])  # fmt: skip
def test_a_child_that_dies_mid_run_is_a_retryable_crash_and_is_replaced(
    pool: Pool, params: dict[str, Any], how: str
) -> None:
    first = answer(pool.run(n=1))["pid"]
    end = pool.run(**params)
    assert end.error is not None and not end.timed_out
    assert end.error.error_type == "WorkerCrashed" and end.error.retryable is True
    assert end.error.message == f"the process running the handler {how}"
    assert gone(first) and first not in pool.executor.pids
    assert len(pool.executor.pids) == 1, "replaced at once, by one child"
    assert answer(pool.run(n=2))["pid"] == pool.executor.pids[0]


@pytest.mark.usefixtures("child_processes")
def test_a_run_past_its_timeout_is_killed_and_its_slot_comes_back_with_a_new_child() -> None:
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor = ProcessExecutor(APP, 1, ends.put, kill_grace_s=0.5)
    pool = Pool(executor, ends)
    try:
        for params in ({"sleep_s": 600}, {"sleep_s": 600, "stubborn": True}):
            pid = answer(pool.run(n=0))["pid"]
            token = pool.submit(**params)
            time.sleep(0.3)  # let it begin: a kill of a run not started is no test of it
            started = time.monotonic()
            executor.kill(token)
            end = pool.end(token)
            assert end.timed_out and end.error is None and end.result is None
            # By the time the run is reported, its child is dead and another has its place.
            assert gone(pid) and executor.pids != [pid] and len(executor.pids) == 1
            if params.get("stubborn"):  # SIGTERM swallowed: SIGKILL after the grace
                assert time.monotonic() - started >= 0.5
            assert answer(pool.run(n=1))["pid"] == executor.pids[0], "the slot is back"
    finally:
        executor.close()


def test_a_cancelled_run_ends_cancelled(pool: Pool) -> None:
    token = pool.submit(sleep_s=600)
    time.sleep(0.3)
    pool.executor.cancel(token, grace_s=0.5)
    end = pool.end(token)
    assert end.cancelled and not end.timed_out


def test_many_no_op_jobs_reuse_the_same_children(pool: Pool) -> None:
    pids = {answer(pool.run(n=i))["pid"] for i in range(200)}
    assert len(pids) == 1, "one after another: the same child every time"
    for _ in range(50):  # two at a time: two children, no more
        tokens = [pool.submit(n=1), pool.submit(n=2)]
        found = {pool.ends.get(timeout=60) for _ in tokens}
        pids |= {answer(end)["pid"] for end in found}
    assert len(pids) <= 2 and set(pool.executor.pids) >= pids


def test_an_app_not_loaded_by_its_target_cannot_run_in_processes() -> None:
    with pytest.raises(ConfigurationError, match="load_app"):
        ProcessExecutor.for_app(WorkerApp(), 1, print)


PARENT = """
import queue, sys
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.processes import ProcessExecutor
from tests.pipeline.worker.executions import execution_requested

app = load_app(sys.argv[1])
executor = ProcessExecutor(sys.argv[1], 2, queue.SimpleQueue().put)
for token in (1, 2):
    params = {"sleep_s": 600, "mark": f"{sys.argv[2]}/began-{token}"}
    record = execution_requested(job_type="iso.work", params=params).data
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=600)
    executor.submit(token, app.get("iso.work"), ctx)
print(*executor.pids, flush=True)
queue.SimpleQueue().get()
"""


@pytest.mark.usefixtures("child_processes")
def test_children_die_with_a_worker_killed_by_sigkill(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, APP, str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2
        wait_for(lambda: len(list(tmp_path.glob("began-*"))) == 2, timeout_s=60,
                 what="both children to run their jobs")  # fmt: skip
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    wait_for(lambda: all(gone(pid) for pid in pids), timeout_s=LIFELINE_GRACE_S + 30,
             what="the orphaned children to end")  # fmt: skip
