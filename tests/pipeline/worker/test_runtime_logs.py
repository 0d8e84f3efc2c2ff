"""Every ended run leaves its log lines on jobs.logs, against the real broker: SUCCEEDED,
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

from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from pipeline.worker.runlogs import decode_lines
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.pipeline.worker.test_cancel_runs import cancel
from tests.support.reader import TopicReader

log = logging.getLogger("tests.runtime_logs")


@pytest.fixture(autouse=True)
def info_level() -> Iterator[None]:
    before = log.level
    log.setLevel(logging.INFO)
    yield
    log.setLevel(before)


def logs_records(topics: Topics) -> dict[str, dict[str, Any]]:
    """Every record on jobs.logs so far by execution id (headers, lines), read committed
    as any Kafka client reads it."""
    reader = TopicReader(topics.settings, topics.logs, topics.settings.logs_partitions)
    try:
        messages = reader.raw_to_end()
    finally:
        reader.close()
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        headers = {k: (v or b"").decode() for k, v in message.headers() or ()}
        found[headers["execution-id"]] = {
            **headers, "key": (message.key() or b"").decode(),
            "lines": [line["msg"] for line in decode_lines(message.value() or b"")]}
    return found


def test_every_ended_run_leaves_its_own_lines(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    gate = threading.Event()

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
            while not ctx.wait_cancelled(0.05):
                pass
            log.info("saw the cancel")
        if mode == "given_up":
            gate.wait(30)
        return "done"

    jobs = {mode: execution_requested(params={"mode": mode},
                                      timeout_ms=800 if mode == "times_out" else None)
            for mode in ("succeeds", "fails", "times_out", "cancelled", "silent")}  # fmt: skip
    ids = dict(zip(jobs, submit(topics, *jobs.values()), strict=True))
    worker = start_worker(app, concurrency=5, drain_timeout_s=0.5)
    events.wait(ids["cancelled"], "STARTED")
    cancel(topics, jobs["cancelled"])
    ends = {mode: kind for mode, kind in (("succeeds", "SUCCEEDED"), ("fails", "FAILED"),
            ("times_out", "TIMED_OUT"), ("cancelled", "CANCELLED"), ("silent", "SUCCEEDED"))}
    outcomes = {mode: events.wait(ids[mode], kind)[0] for mode, kind in ends.items()}
    gate.set()  # the timed-out run's thread returns, and logs once more
    given_up = execution_requested(params={"mode": "given_up"})
    gate.clear()
    (ids["given_up"],) = submit(topics, given_up)
    events.wait(ids["given_up"], "STARTED")
    worker.shut_down()
    gate.set()
    (outcomes["given_up"],) = events.wait(ids["given_up"], "FAILED")

    silent = ids.pop("silent")
    found = logs_records(topics)
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
