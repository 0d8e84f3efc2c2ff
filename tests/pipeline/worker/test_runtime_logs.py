"""Every ended run leaves its log lines on jobs.logs, on the driver (no broker): SUCCEEDED,
FAILED, TIMED_OUT, CANCELLED, and a run given up when the worker stops; each record
holds its own run's lines, up to the moment the run was reported, and each outcome says
how many. A run that logged nothing leaves no record, and its outcome says 0."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.runlogs import decode_lines
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker, cancel_request

log = logging.getLogger("tests.runtime_logs")


@pytest.fixture(autouse=True)
def info_level() -> Iterator[None]:
    before = log.level
    log.setLevel(logging.INFO)
    yield
    log.setLevel(before)


def logs_records(driver: WorkerDriver) -> dict[str, dict[str, Any]]:
    """Every record on jobs.logs so far by execution id (headers, lines)."""
    messages = driver.broker.records(driver.topics.logs)
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        headers = {k: (v or b"").decode() for k, v in message.headers() or ()}
        found[headers["execution-id"]] = {
            **headers, "key": (message.key() or b"").decode(),
            "lines": [line["msg"] for line in decode_lines(message.value() or b"")]}
    return found


def test_every_ended_run_leaves_its_own_lines(drive: DriveWorker) -> None:
    app = WorkerApp()
    gate = threading.Event()
    cancelled_began, given_up_began = threading.Event(), threading.Event()

    @app.handler("data.process")
    def work(ctx: JobContext) -> str | None:
        mode = ctx.params["mode"]
        if mode == "silent":
            return None
        log.info("%s begins", mode)
        if mode == "fails":
            raise ValueError("bad input")
        if mode == "times_out":
            gate.wait(30)
            log.info("after its deadline")  # reported TIMED_OUT already: not kept
        if mode == "cancelled":
            cancelled_began.set()
            while not ctx.wait_cancelled(0.05):
                pass
            log.info("saw the cancel")
        if mode == "given_up":
            given_up_began.set()
            gate.wait(30)
        return "done"

    jobs = {mode: execution_requested(params={"mode": mode},
                                      timeout_ms=800 if mode == "times_out" else None)
            for mode in ("succeeds", "fails", "times_out", "cancelled", "silent")}  # fmt: skip
    driver = drive(app, concurrency=5, drain_timeout_s=0.5)
    ids = dict(zip(jobs, driver.fire(*jobs.values()), strict=True))
    driver.step()
    driver.run_until(cancelled_began.is_set, what="the run to cancel")
    driver.cancel(cancel_request(jobs["cancelled"], at_ms=driver.clock.now_ms))
    ends = {mode: kind for mode, kind in (("succeeds", "SUCCEEDED"), ("fails", "FAILED"),
            ("cancelled", "CANCELLED"), ("silent", "SUCCEEDED"))}
    driver.run_until(lambda: all(driver.events(ids[m], k) for m, k in ends.items()),
                     what="the runs' ends")  # fmt: skip
    driver.advance(800)
    ends["times_out"] = "TIMED_OUT"
    outcomes = {mode: driver.events(ids[mode], kind)[0] for mode, kind in ends.items()}
    gate.set()  # the timed-out run's thread returns, and logs once more
    driver.run_until(lambda: driver.loop.stats.running == 0, what="its thread's return")
    gate.clear()
    (ids["given_up"],) = driver.fire(execution_requested(params={"mode": "given_up"}))
    driver.step()
    driver.run_until(given_up_began.is_set, what="the run to give up")
    driver.shut_down(wait=False)
    gate.set()
    (outcomes["given_up"],) = driver.events(ids["given_up"], "FAILED")

    silent = ids.pop("silent")
    found = logs_records(driver)
    assert silent not in found, "a run that logged nothing writes no record"
    assert outcomes.pop("silent")["log_lines"] == 0, "its outcome says so instead"
    for mode, execution_id in ids.items():
        record = found[execution_id]
        assert outcomes[mode]["log_lines"] == len(record["lines"]), (mode, outcomes[mode])
        expected = [f"{mode} begins", *(["saw the cancel"] if mode == "cancelled" else [])]
        assert record["lines"] == expected, (mode, record)
        assert record["attempt"] == "1" and record["dropped-lines"] == "0"
        assert record["key"] == execution_id.split(":")[0], "keyed by the job id"
    assert orjson.dumps(found)  # plain data, as any client reads it
