"""Triggers on the broker, through the doors a user takes: a trigger defined with the CLI on
a topic written by Kafka's own Java console producer; one job per matching record, kept
through a kill -9 of the trigger processor mid-stream and a replay of the topic from its
start (the group deleted): every matching record has its job, and no job fires twice; a
record that is not JSON lands in jobs.triggers.dlq with its reason.

One stack for the module (timers, status processor, retry router, trigger processor, no
worker: a job's execution stays on its execution topic, where each id is counted).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from jobstream._ops.kafka.jars import classpath, java_executable
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, running_stack, small_topics
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.runtime.options import processor_group
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics, TopicSpec
from jobstream._pipeline.triggers.engine import ERROR_HEADER, SOURCE_HEADER, TRIGGER_HEADER
from jobstream._pipeline.triggers.ids import trigger_job_id
from tests.support.waiting import wait_for

OWNER = "shop"
NAME = "orders-paid"
JOB_TYPE = "order.ship"
PROCESSOR = "trigger-processor"


@pytest.fixture(scope="module")
def topics(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Topics:
    topics = small_topics(kafka_bootstrap, f"trig-{uuid.uuid4().hex[:8]}.")
    ensure_topics(topics.settings.kafka_config,
                  [TopicSpec(source(topics), 2), *topics.job_type_specs(JOB_TYPE)])
    return topics


def source(topics: Topics) -> str:
    return f"{topics.settings.topic_prefix}orders"


@pytest.fixture(scope="module")
def stack(topics: Topics, tmp_path_factory: pytest.TempPathFactory,
          child_processes: None) -> Iterator[Stack]:  # fmt: skip
    parts = components(free_ports(4), job_types=(), lease_s=5, triggers=True)
    with running_stack(topics.settings, tmp_path_factory.mktemp("stack"), parts) as running:
        yield running


def jobstream(stack: Stack, *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "jobstream._pipeline", *args], env=stack.env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def java_produce(topics: Topics, lines: list[str]) -> None:
    """Kafka's own console producer, key and value split at '|' (docs/triggers.md)."""
    run = subprocess.run(
        [java_executable(), "-cp", classpath(), "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", topics.settings.bootstrap_servers, "--topic", source(topics),
         "--property", "parse.key=true", "--property", "key.separator=|"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]


def order(i: int) -> str:
    status = "paid" if i % 2 == 0 else "new"
    return f"c-{i % 5}|" + orjson.dumps({"id": i, "status": status}).decode()


def records(topics: Topics, topic: str) -> list:
    with TopicScan(topics.settings, topic) as scan:
        return [message for batch in scan for message in batch]


def fired(topics: Topics) -> Counter[str]:
    """Executions on the type's execution topic, per job id: each job fired once."""
    _, deserialize = make_serde(None)
    ids: Counter[str] = Counter()
    for message in records(topics, topics.execution(JOB_TYPE, "normal")):
        event = deserialize(message.value())
        assert isinstance(event.data, ExecutionRequested)
        ids[event.data.job_id] += 1
    return ids


def expected_ids(topics: Topics) -> set[str]:
    """The job of every matching record of the source, by where the record lies."""
    return {trigger_job_id(OWNER, NAME, m.topic(), m.partition(), m.offset())
            for m in records(topics, source(topics)) if paid(m.value())}  # fmt: skip


def paid(value: bytes) -> bool:
    return b"\"status\":\"paid\"" in value


def test_a_trigger_starts_one_job_per_matching_record_through_a_crash_and_a_replay(
        topics: Topics, stack: Stack) -> None:  # fmt: skip
    out = jobstream(stack, "triggers", "add", NAME, "--owner", OWNER, "--source", source(topics),
                    "--type", JOB_TYPE, "--filter", 'value.status == "paid"',
                    "--param", "order=value.id", "--param", "customer=key")  # fmt: skip
    assert f"{OWNER}/{NAME}" in out
    assert NAME in jobstream(stack, "triggers", "list")

    java_produce(topics, [order(i) for i in range(40)])
    wait_for(lambda: len(fired(topics)) >= 5, timeout_s=60, what="the first triggered jobs")
    processor = stack.processes[PROCESSOR][0]
    stack.kill(PROCESSOR)  # kill -9, mid-stream
    java_produce(topics, [order(i) for i in range(40, 80)] + ["c-x|{not json"])
    stack.launch([processor])

    wanted = expected_ids(topics)
    assert len(wanted) == 40
    wait_for(lambda: set(fired(topics)) >= wanted, timeout_s=90, what="a job per paid order")
    statuses = read_statuses(topics.settings, owner=OWNER)
    assert wanted <= set(statuses)
    some = statuses[min(wanted)]
    assert some.labels["trigger"] == NAME

    # Replay from the start: the group deleted, the processor reads the topic again.
    stack.kill(PROCESSOR, graceful=True)
    group = processor_group(topics.settings.topic_prefix, "triggers")
    # A static member stays in its group until its session times out (6 s).
    wait_for(lambda: _deleted(topics, group), timeout_s=30, interval_s=0.5,
             what=f"{group} deleted")  # fmt: skip
    submitted_before = len(records(topics, topics.intake))
    stack.launch([processor])
    wait_for(lambda: len(records(topics, topics.intake)) >= submitted_before + len(wanted),
             timeout_s=60, what="the replay's submissions")  # fmt: skip
    wait_for(lambda: _timers_caught_up(topics), timeout_s=60, what="the timers past the replay")
    counts = fired(topics)
    assert set(counts) == wanted, "a job for a record that does not match, or one missing"
    assert max(counts.values()) == 1, f"fired twice: {[i for i, n in counts.items() if n > 1]}"

    # The one unreadable record, dead-lettered once by each reading (the replay's too).
    letters = [m for m in records(topics, topics.triggers_dlq)
               if dict(m.headers())[TRIGGER_HEADER] == f"{OWNER}/{NAME}".encode()]
    assert len({dict(m.headers())[SOURCE_HEADER] for m in letters}) == 1
    dead = letters[0]
    headers = dict(dead.headers())
    assert headers[ERROR_HEADER].startswith(b"value: not JSON")
    assert headers[SOURCE_HEADER].startswith(f"{source(topics)}/".encode())
    assert dead.value() == b"{not json" and dead.key() == b"c-x"


def _deleted(topics: Topics, group: str) -> bool:
    admin = AdminClient(topics.settings.kafka_config)
    try:
        admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.NON_EMPTY_GROUP:
            return False
        raise
    return True


def _timers_caught_up(topics: Topics) -> bool:
    """Whether the timers have committed jobs.intake to its end: the replay's submissions
    are behind them, each kept or dropped."""
    group = processor_group(topics.settings.topic_prefix, "timers")
    consumer = clients.consumer(topics.settings, group)
    try:
        partitions = [TopicPartition(topics.intake, p) for p in range(2)]
        committed = consumer.committed(partitions, timeout=10)
        ends = [consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
    finally:
        consumer.close()
    return all(tp.offset >= end for tp, end in zip(committed, ends, strict=True))
