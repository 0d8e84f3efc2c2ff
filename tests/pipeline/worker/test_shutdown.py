"""Worker health on jobs.workers, draining on stop, and giving unfinished jobs up."""

from __future__ import annotations

import threading

from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker, TopicReader, committed_offsets
from tests.support.waiting import wait_for


def blocking_app(gate: threading.Event) -> WorkerApp:
    app = WorkerApp()

    @app.handler("data.process")
    def wait_for_gate(ctx: JobContext) -> str:
        if ctx.params.get("block", True):
            gate.wait(120)
        return "finished"

    return app


def test_health_records_and_a_drain_that_commits_the_job_in_flight(
    topics: Topics, start_worker: StartWorker, events: EventLog, workers_topic: TopicReader,
    gate: threading.Event,
) -> None:  # fmt: skip
    (execution_id,) = submit(topics, execution_requested())
    worker = start_worker(blocking_app(gate), worker_id="w-health", concurrency=4,
                          worker_heartbeat_s=0.3)  # fmt: skip
    events.wait(execution_id, "STARTED")

    def health(state: str, running: bool = False) -> list[dict]:
        return [r for r in workers_topic.poll() if r["state"] == state
                and (not running or r["running"] == [execution_id])]  # fmt: skip

    beat = wait_for(lambda: health("RUNNING", running=True), timeout_s=30,
                    what="a RUNNING heartbeat listing the job")[0]  # fmt: skip
    assert (beat["worker_id"], beat["job_types"], beat["capacity"]) == (
        "w-health", ["data.process"], 4)  # fmt: skip
    assert health("STARTING"), "a worker announces itself before it joins its groups"

    worker.stop.set()
    wait_for(lambda: health("DRAINING"), timeout_s=30, what="DRAINING")
    assert worker.thread is not None and worker.thread.is_alive(), "waits for the running job"
    gate.set()
    worker.shut_down()
    assert events.of(execution_id, "SUCCEEDED"), "the drained job's outcome is committed"
    assert committed_offsets(topics.settings, "data.process") == 1
    assert wait_for(lambda: health("STOPPED"), timeout_s=30, what="STOPPED")[-1]["running"] == []


def test_a_job_still_running_after_the_drain_timeout_is_given_up_as_failed(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    execution = execution_requested(params={"block": True})
    (execution_id,) = submit(topics, execution)
    first = start_worker(blocking_app(gate), worker_id="first", drain_timeout_s=0.5)
    events.wait(execution_id, "STARTED")
    first.shut_down()
    assert first.runtime.stats.given_up == 1
    failed = events.wait(execution_id, "FAILED")[0]
    assert failed["error"]["error_type"] == "WorkerStopped" and failed["error"]["retryable"]
    assert committed_offsets(topics.settings, "data.process") == 1, "claimed when it started"

    gate.set()
    start_worker(blocking_app(gate), worker_id="second")
    (after,) = submit(topics, execution_requested(params={"block": False}))
    assert events.wait(after, "SUCCEEDED")[0]["worker_id"] == "second"
    assert events.kinds(execution_id) == ["STARTED", "FAILED"], "not handed out again"


def test_an_outcome_waiting_for_the_commit_interval_is_committed_by_the_drain(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    (execution_id,) = submit(topics, execution_requested())
    worker = start_worker(blocking_app(gate), commit_interval_s=600)
    events.wait(execution_id, "STARTED")
    gate.set()
    wait_for(lambda: worker.runtime.stats.succeeded == 1, timeout_s=30, what="the job to end")
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED"], "the outcome waits for the interval"
    worker.shut_down()
    assert events.kinds(execution_id) == ["STARTED", "SUCCEEDED"]
    assert committed_offsets(topics.settings, "data.process") == 1
