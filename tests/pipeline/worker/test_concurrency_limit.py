"""A worker of a limited type lets its runs end before its partitions are revoked, and
refuses to start on topics whose partition count its slots are not split over.

``data.process`` is limited to 2 on 2 partitions (one slot each). Worker A holds both and
runs two jobs, one per partition; worker B joins. The group's rebalance revokes A's
partitions while both runs go on: A lets them end and commits them first, so B, given
one of the partitions, starts neither of those records again nor anything beside them.
"""

from __future__ import annotations

import threading
import time

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.loop import WorkerLoop
from jobstream._pipeline.worker.options import WorkerOptions
from jobstream._pipeline.worker.outcomes import event_key
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import EventLog, StartWorker
from tests.support.overlap import Runs, most_at_once
from tests.support.pipeline import SERIALIZE
from tests.support.waiting import wait_for

TYPE = "data.process"
LIMIT = 2
PER_PARTITION = 4
SLEEP_S = 1.0


@pytest.fixture
def settings(kafka_bootstrap: str, unique_name: str) -> Settings:
    return Settings(bootstrap_servers=kafka_bootstrap, topic_prefix=f"{unique_name}.",
                    timer_partitions=1, exec_partitions=2, events_partitions=2,
                    status_partitions=1, dlq_partitions=1,
                    concurrency_limits={TYPE: LIMIT})  # fmt: skip


def sleeper() -> WorkerApp:
    app = WorkerApp()

    @app.handler(TYPE)
    def sleep(ctx: JobContext) -> None:
        time.sleep(SLEEP_S)

    return app


def test_a_revoked_worker_ends_its_runs_before_the_next_owner_starts(
    topics: Topics, events: EventLog, start_worker: StartWorker
) -> None:
    producer = clients.producer(topics.settings)
    ids = []
    for partition in range(2):
        for _ in range(PER_PARTITION):
            execution = execution_requested(job_type=TYPE)
            producer.produce(topics.execution(TYPE, "NORMAL"), SERIALIZE(execution),
                             event_key(execution.data), partition=partition)  # fmt: skip
            ids.append(execution.data["execution_id"])
    assert producer.flush(30) == 0

    start_worker(sleeper(), worker_id="a", concurrency=4)
    wait_for(lambda: len(Runs(events.poll()).open["a"]) == LIMIT, timeout_s=60,
             what="worker a running one job per partition")  # fmt: skip
    start_worker(sleeper(), worker_id="b", concurrency=4)

    def all_ended() -> Runs | None:
        runs = Runs(events.poll())
        return runs if len(runs.ended) >= len(ids) else None

    runs = wait_for(all_ended, timeout_s=120, what="every job to end")
    started = [r["execution_id"] for r in events.records if r["kind"] == "STARTED"]
    assert sorted(started) == sorted(ids), "a record ran twice: its run was not waited for"
    assert {worker for worker, _, _ in runs.ended} == {"a", "b"}
    assert most_at_once(runs.intervals) == LIMIT, sorted(runs.intervals)


def test_a_limited_type_on_topics_of_another_partition_count_stops_the_worker(
    topics: Topics,
) -> None:
    other = topics.settings.model_copy(update={"exec_partitions": 3})
    options = WorkerOptions(worker_id="c")
    runtime = WorkerLoop(other, sleeper(), options)
    with pytest.raises(ConfigurationError) as error:
        runtime.run(threading.Event())
    topic = topics.execution(TYPE, "HIGH")
    assert str(error.value) == (
        f"{topic} has 2 partitions, but {TYPE} has a concurrency limit split over "
        "JOBSTREAM_EXEC_PARTITIONS=3: give the setting the topic's count (timers and "
        "workers alike)"
    )
