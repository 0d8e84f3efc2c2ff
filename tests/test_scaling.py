"""Two processes of every component on one set of topics (docs/scaling.md): each consumer
group splits its partitions between its two members (disjoint, covering all; the timers
own partition p of jobs.intake and of jobs.retry together, since one store per partition
holds both), and the work splits with them: every job ends exactly once, and each of the
eight processes did some of it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from jobstream._ops.faults.groups import wait_assigned
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.scrape import scrape, value
from jobstream._ops.stack import Stack, components
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import PRIORITIES, Topics
from tests.support.reader import TopicReader
from tests.support.stack import APP, running_stack
from tests.support.waiting import wait_for

TYPE = "data.process"
PARTITIONS = 3  # odd: a round-robin assignor would split partition p of two topics
JOBS = 120
RETRIED = 40  # jobs whose first attempt fails: the retry router's and jobs.retry's work


@pytest.fixture(scope="module")
def settings(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    scaled = Settings(bootstrap_servers=kafka_bootstrap,
                      topic_prefix=f"scaling-{tmp_path_factory.mktemp('x').name}.",
                      timer_partitions=PARTITIONS, exec_partitions=PARTITIONS,
                      events_partitions=PARTITIONS, status_partitions=PARTITIONS,
                      dlq_partitions=1)  # fmt: skip
    ensure_topics(scaled.kafka_config, Topics(scaled).specs())
    return scaled


@pytest.fixture(scope="module")
def stack(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ports = free_ports(8)  # two copies of: timers, status, retry, one worker
    parts = [part for instance in (0, 1)
             for part in components(ports + 4 * instance, app=APP, job_types=(TYPE,),
                                    heartbeat_s=0.5, instance=instance)]  # fmt: skip
    with running_stack(settings, tmp_path_factory.mktemp("stack"), parts) as running:
        yield running


def groups(settings: Settings) -> dict[str, list[str]]:
    """Each group of the pipeline, with the topics its members consume."""
    topics = Topics(settings)
    prefix = f"{settings.topic_prefix}jobstream"
    return {
        f"{prefix}.timers": [topics.intake, topics.retry],
        f"{prefix}.status": [topics.events, topics.status_handover],
        f"{prefix}.retry": [topics.events],
        f"{prefix}.workers.{TYPE}": [topics.execution(TYPE, p) for p in PRIORITIES],
    }


def assignments(settings: Settings) -> dict[str, dict[str, set[tuple[str, int]]]]:
    """Group -> member (its instance or client id) -> the partitions it holds."""
    admin = AdminClient(settings.kafka_config)
    found: dict[str, dict[str, set[tuple[str, int]]]] = {}
    for group, future in admin.describe_consumer_groups(list(groups(settings))).items():
        described = future.result()
        found[group] = {
            member.group_instance_id or member.client_id:
                {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions}
            for member in described.members
        }  # fmt: skip
    return found


def test_two_of_each_split_the_partitions_and_the_work(stack: Stack, settings: Settings) -> None:
    wait_assigned(settings, {group: 2 for group in groups(settings)}, timeout_s=120)

    # The partitions: two members per group, disjoint, together every partition.
    held = assignments(settings)
    for group, topics in groups(settings).items():
        members = list(held[group].values())
        assert len(members) == 2, group
        first, second = members
        assert not first & second, f"{group}: a partition held twice"
        assert first | second == {(t, p) for t in topics for p in range(PARTITIONS)}, group
        if group.endswith((".timers", ".status")):
            for owned in members:  # partition p of both topics in one store
                by_topic = {t: {p for name, p in owned if name == t} for t in topics}
                assert by_topic[topics[0]] == by_topic[topics[1]], owned

    # The work: every job ends once; each process did some of it.
    fast = RetryPolicy(initial_backoff_ms=200, jitter=0)
    requests = [JobRequest(job_type=TYPE, owner="scaling", params={}) for _ in range(JOBS)]
    requests += [JobRequest(job_type=TYPE, owner="scaling",
                            params={"fail_until_attempt": 2}, retry=fast)
                 for _ in range(RETRIED)]  # fmt: skip
    with JobClient(settings) as client:
        ids = set(client.submit_many(requests))

    def all_succeeded() -> bool:
        found = read_statuses(settings, owner="scaling")
        return sum(found[i].state == "SUCCEEDED" for i in ids if i in found) == len(ids)

    wait_for(all_succeeded, timeout_s=180, interval_s=1, what="every job to succeed")

    reader = TopicReader(settings, Topics(settings).events, PARTITIONS)
    try:
        events = [e for e in reader.catch_up() if e["job_id"] in ids]
    finally:
        reader.close()
    succeeded = Counter(e["job_id"] for e in events if e["kind"] == "SUCCEEDED")
    assert succeeded == Counter(ids), "a job did not end, or ended twice"
    started_by = Counter(e["worker_id"] for e in events if e["kind"] == "STARTED")
    assert sorted(started_by) == [f"{TYPE}-0", f"{TYPE}-1"], started_by
    assert sum(started_by.values()) == JOBS + 2 * RETRIED

    fired = JOBS + 2 * RETRIED
    expected = {  # role -> (series, labels, the two instances' total)
        "timers": ("jobstream_fired_total", {"job_type": TYPE}, fired),
        "status-processor": ("jobstream_consumed_total", {"component": "status"}, None),
        "retry-router": ("jobstream_retries_total", {"job_type": TYPE}, RETRIED),
        f"worker-{TYPE}": ("jobstream_executions_total",
                           {"job_type": TYPE, "outcome": "SUCCEEDED"}, JOBS + RETRIED),
    }  # fmt: skip

    def counted() -> dict[str, list[float]]:
        per_role = {role: [value(scrape(_port(stack, role, i)), series, **labels)
                           for i in (0, 1)]
                    for role, (series, labels, _) in expected.items()}  # fmt: skip
        done = all(total is None or sum(per_role[role]) >= total
                   for role, (_, _, total) in expected.items())  # fmt: skip
        return per_role if done else {}

    per_role = wait_for(counted, timeout_s=30, interval_s=0.5, what="the metrics to count")
    for role, (_, _, total) in expected.items():
        assert all(n > 0 for n in per_role[role]), f"an idle {role}: {per_role[role]}"
        if total is not None:
            assert sum(per_role[role]) == total, f"{role}: {per_role[role]} != {total}"


def _port(stack: Stack, role: str, instance: int) -> int:
    """The metrics port of one instance of a role (names as ``components`` gives them)."""
    if role.startswith("worker-"):
        name = f"{role}-{instance}"
    else:
        name = f"{role}-{instance}" if instance else role
    return stack.processes[name][0].metrics_port
