"""A worker whose producer is fenced replaces it and goes on: no outcome lost, no stop."""

from __future__ import annotations

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker


def test_a_fenced_worker_replaces_its_producer_and_reports_every_outcome(
    topics: Topics, start_worker: StartWorker, events: EventLog, quick_app: WorkerApp
) -> None:
    first = submit(topics, *(execution_requested(params={"n": n}) for n in range(10)))
    worker = start_worker(quick_app, worker_id="fenced-worker")
    for execution_id in first:
        events.wait(execution_id, "SUCCEEDED")

    # Another process takes the lane's transactional id: the worker's producer is fenced.
    intruder = clients.producer(
        topics.settings,
        transactional_id=f"{topics.settings.topic_prefix}jobstream.worker.data.process--fenced-worker",
    )
    intruder.init_transactions(30)
    later = submit(topics, *(execution_requested(params={"n": n}) for n in range(10, 20)))
    for execution_id in later:
        events.wait(execution_id, "SUCCEEDED")

    assert worker.runtime.lanes[0].tx.renewed >= 1, "the fenced producer was replaced"
    assert worker.error is None and worker.thread is not None and worker.thread.is_alive()
    assert all(len(events.of(e, "SUCCEEDED")) == 1 for e in first + later)
