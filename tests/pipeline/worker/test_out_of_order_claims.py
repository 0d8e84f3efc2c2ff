"""A worker killed after it claimed records out of their partition's order, against the
real broker: its commit holds the lowest offset not yet done and, in its metadata, the
offsets done above it, so the partition's next owner runs the record left behind and
passes over those already started, none started twice (pipeline/worker/offsets.py)."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.topics import Topics
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.sample_app import app
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.pipeline.worker.test_cli import start


def test_the_next_owner_runs_what_was_left_and_starts_nothing_twice(
    topics: Topics, tmp_path: Path, events: EventLog, start_worker: StartWorker
) -> None:
    # The first record is due later: it waits before its instant while the three behind
    # it in the partition are claimed, and run until the worker is killed.
    later, *running = submit(
        topics, execution_requested(due_ms=now_ms() + 20_000),
        *(execution_requested(params={"seconds": 120}) for _ in range(3)), partition=0,
    )  # fmt: skip
    killed = start(topics, tmp_path, "--type", "data.process", "--concurrency", "4",
                   "--worker-id", "killed-worker")  # fmt: skip
    try:
        for execution_id in running:
            events.wait(execution_id, "STARTED", timeout_s=90)
    finally:
        killed.kill()
        killed.wait(30)

    successor = start_worker(app, worker_id="successor")
    events.wait(later, "SUCCEEDED", timeout_s=90)
    events.catch_up()
    assert [len(events.of(execution_id, "STARTED")) for execution_id in running] == [1, 1, 1]
    assert successor.runtime.lanes[0].tracker.started_before == 3
    assert events.of(later, "STARTED")[0]["worker_id"] == "successor"
