"""Every ended run leaves its log lines on jobs.logs, against the real broker: SUCCEEDED,
FAILED, TIMED_OUT, CANCELLED, and a run given up when the worker stops; each record
holds its own run's lines, up to the moment the run was reported."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from confluent_kafka import TopicPartition

from pipeline.kafka import clients
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from pipeline.worker.runlogs import decode_lines
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.pipeline.worker.test_cancel_runs import cancel
from tests.support.waiting import wait_for

log = logging.getLogger("tests.runtime_logs")


@pytest.fixture(autouse=True)
def info_level() -> Iterator[None]:
    before = log.level
    log.setLevel(logging.INFO)
    yield
    log.setLevel(before)


def logs_records(topics: Topics, execution_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The record of each of ``execution_ids`` on jobs.logs (headers, lines), read
    committed as any Kafka client reads it."""
    settings = topics.settings
    consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
    consumer.assign([TopicPartition(topics.logs, p, 0) for p in range(settings.logs_partitions)])
    found: dict[str, dict[str, Any]] = {}

    def read() -> bool:
        for message in consumer.consume(100, timeout=0.2):
            if message.error() is not None:
                continue
            headers = {k: (v or b"").decode() for k, v in message.headers() or ()}
            found[headers["execution-id"]] = {
                **headers, "key": (message.key() or b"").decode(),
                "lines": [line["msg"] for line in decode_lines(message.value() or b"")]}
        return all(execution_id in found for execution_id in execution_ids)

    try:
        wait_for(read, timeout_s=60, what=f"the logs of {execution_ids} on {topics.logs}")
    finally:
        consumer.close()
    return found


def test_every_ended_run_leaves_its_own_lines(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    gate = threading.Event()

    @app.handler("data.process")
    def work(ctx: JobContext) -> str:
        mode = ctx.params["mode"]
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
            for mode in ("succeeds", "fails", "times_out", "cancelled")}  # fmt: skip
    ids = dict(zip(jobs, submit(topics, *jobs.values()), strict=True))
    worker = start_worker(app, concurrency=5, drain_timeout_s=0.5)
    events.wait(ids["cancelled"], "STARTED")
    cancel(topics, jobs["cancelled"])
    for mode, kind in (("succeeds", "SUCCEEDED"), ("fails", "FAILED"),
                       ("times_out", "TIMED_OUT"), ("cancelled", "CANCELLED")):  # fmt: skip
        events.wait(ids[mode], kind)
    gate.set()  # the timed-out run's thread returns, and logs once more
    given_up = execution_requested(params={"mode": "given_up"})
    gate.clear()
    (ids["given_up"],) = submit(topics, given_up)
    events.wait(ids["given_up"], "STARTED")
    worker.shut_down()
    gate.set()
    events.wait(ids["given_up"], "FAILED")

    found = logs_records(topics, list(ids.values()))
    for mode, execution_id in ids.items():
        record = found[execution_id]
        expected = [f"{mode} begins", *(["saw the cancel"] if mode == "cancelled" else [])]
        assert record["lines"] == expected, (mode, record)
        assert record["attempt"] == "1" and record["dropped-lines"] == "0"
        assert record["key"] == execution_id.split(":")[0], "keyed by the job id"
    assert orjson.dumps(found)  # plain data, as any client reads it
