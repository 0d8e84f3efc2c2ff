"""``jobstream topics grow --exec-partitions`` under a steady load (docs/scaling.md,
"Growing the execution topics"): a type's execution topics grow from 2 to 4 partitions
while jobs keep coming; the two workers' group takes the new partitions by itself (their
metadata refresh), then a third worker joins. From jobs.events: every submitted job
SUCCEEDED exactly once, the new partitions carried executions, which the workers ran, and
the third worker ran jobs. Had the type a concurrency limit, the command would have refused
while the timers and its workers run.
Every component a process, on topics of the module's own.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from jobstream._ops.faults.groups import wait_assigned
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Component, Stack, running_stack, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.grow import grow_execution_topics
from jobstream._pipeline.worker.lane import worker_group
from tests.support.reader import TopicReader
from tests.support.stack import APP
from tests.support.waiting import wait_for

TYPE = "data.process"
OWNER = "exec-grow"
BATCH, EVERY_S = 5, 0.2  # 25 jobs/s, each 20 ms of work
_, DESERIALIZE = make_serde()


@pytest.fixture(scope="module")
def settings(kafka_bootstrap: str) -> Settings:
    grown = Settings(bootstrap_servers=kafka_bootstrap,
                     topic_prefix=f"execgrow-{uuid.uuid4().hex[:8]}.", job_types=(TYPE,),
                     timer_partitions=1, exec_partitions=2, events_partitions=2,
                     status_partitions=1, dlq_partitions=1)  # fmt: skip
    ensure_topics(grown.kafka_config, Topics(grown).specs())
    return grown


@pytest.fixture(scope="module")
def port() -> int:
    """The first of the processes' /healthz ports: the timers, then a port per worker."""
    return free_ports(4)


@pytest.fixture(scope="module")
def stack(settings: Settings, port: int,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:  # fmt: skip
    parts = [Component("timers", ("timers", "--instance-id", "0"), port)]
    parts += [worker(TYPE, f"w{i}", port + 1 + i, app=APP, concurrency=4) for i in range(2)]
    with running_stack(settings, tmp_path_factory.mktemp("stack"), parts) as running:
        wait_assigned(settings, {worker_group(settings.topic_prefix, TYPE): 2}, timeout_s=60)
        yield running


class Load:
    """Jobs submitted at a steady rate from a thread until stopped."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ids: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        job = JobRequest(job_type=TYPE, owner=OWNER, params={"sleep_s": 0.02})
        with JobClient(self.settings) as client:
            while not self.stop.wait(EVERY_S):
                self.ids.extend(client.submit_many([job] * BATCH))

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def holds_every_partition(settings: Settings, topic: str, count: int) -> bool:
    """Whether the workers' group has every partition of ``topic`` assigned."""
    group = worker_group(settings.topic_prefix, TYPE)
    admin = AdminClient(dict(settings.kafka_config))
    [described] = admin.describe_consumer_groups([group], request_timeout=5).values()
    held = {tp.partition for member in described.result().members
            for tp in member.assignment.topic_partitions if tp.topic == topic}  # fmt: skip
    return held == set(range(count))


def executions_on(settings: Settings, topic: str, partitions: range) -> set[str]:
    """The job ids of every execution in ``partitions`` of ``topic``."""
    consumer = clients.consumer(settings, f"reader-{uuid.uuid4().hex[:8]}")
    try:
        assigned = [TopicPartition(topic, p, 0) for p in partitions]
        consumer.assign(assigned)
        ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in assigned}  # fmt: skip
        ids: set[str] = set()

        def at_end() -> bool:
            for message in consumer.consume(1000, timeout=0.2):
                if message.error() is None:
                    ids.add(DESERIALIZE(message.value()).data["job_id"])
            return all(tp.offset >= ends[tp.partition] for tp in consumer.position(assigned)
                       if ends[tp.partition])  # fmt: skip

        wait_for(at_end, timeout_s=30, what="the new partitions read to their end")
        return ids
    finally:
        consumer.close()


def test_execution_topics_grow_under_load_and_lose_nothing(settings: Settings, stack: Stack,
                                                           port: int) -> None:  # fmt: skip
    topics = Topics(settings)
    normal = topics.execution(TYPE, "normal")
    events = TopicReader(settings, topics.events, settings.events_partitions)
    try:
        with Load(settings) as load:
            wait_for(lambda: len(load.ids) >= 10 * BATCH, timeout_s=30, what="a load")
            plan = grow_execution_topics(settings, 4, [TYPE], timeout_s=30)
            assert plan.to_grow == sorted(topics.execution(TYPE, p)
                                          for p in ("high", "normal", "low"))  # fmt: skip
            # The two workers take the new partitions by themselves (their metadata refresh).
            wait_for(lambda: holds_every_partition(settings, normal, 4), timeout_s=30,
                     interval_s=0.5, what="the two workers to hold the new partitions")
            stack.launch([worker(TYPE, "w2", port + 3, app=APP, concurrency=4)])
            wait_assigned(settings, {worker_group(settings.topic_prefix, TYPE): 3},
                          timeout_s=45)  # fmt: skip
            at_three = len(load.ids)
            wait_for(lambda: len(load.ids) >= at_three + 10 * BATCH, timeout_s=30,
                     what="more load with three workers")  # fmt: skip
        submitted = set(load.ids)

        def all_succeeded() -> bool:
            done = {r["job_id"] for r in events.poll() if r["kind"] == "SUCCEEDED"}
            return submitted <= done

        wait_for(all_succeeded, timeout_s=90, interval_s=0.3, what="every job to succeed")
        records = events.catch_up()
    finally:
        events.close()
    succeeded = Counter(r["job_id"] for r in records if r["kind"] == "SUCCEEDED")
    on_new = executions_on(settings, normal, range(2, 4))
    runners = Counter(r["worker_id"] for r in records if r["kind"] == "STARTED")
    print(f"submitted {len(submitted)}, on the new partitions {len(on_new)}, runs by worker "
          f"{dict(runners)}")  # in the output of a failing test
    assert {job for job in submitted if succeeded[job] != 1} == set(), "lost or run twice"
    assert len(on_new) >= 20, f"only {len(on_new)} executions on the new partitions"
    assert on_new <= submitted and all(succeeded[job] == 1 for job in on_new)
    assert runners["w2"] > 0, f"the third worker ran nothing: {runners}"


def test_a_limited_type_is_not_grown_while_its_processes_run(settings: Settings,
                                                             stack: Stack) -> None:  # fmt: skip
    limited = settings.model_copy(update={"concurrency_limits": {TYPE: 3}})
    before = partitions_of_normal(limited)
    with pytest.raises(ValidationError) as refused:
        grow_execution_topics(limited, before + 2, [TYPE], timeout_s=30)
    assert refused.value.field == "--exec-partitions"
    assert f"{limited.topic_prefix}jobstream.timers" in str(refused.value)
    assert f"JOBSTREAM_EXEC_PARTITIONS={before + 2}" in str(refused.value)
    assert partitions_of_normal(limited) == before, "nothing grew"


def partitions_of_normal(settings: Settings) -> int:
    """The partition count of the type's normal tier."""
    admin = AdminClient(dict(settings.kafka_config))
    topic = Topics(settings).execution(TYPE, "normal")
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
