"""``jobstream topics grow --events-partitions`` under load (docs/scaling.md, "Growing
jobs.events"; docs/adr/0013-events-partitions-that-grow.md): the whole pipeline as
processes (timers, a status processor, the retry router, a real worker with heartbeats
every 0.5 s and 4 s leases) runs long jobs and short ones while jobs.events grows from 6
to 12 partitions and a second status processor joins. Then every job SUCCEEDED once, the
grow declared no run lost and counted no duplicate, and runs started before the grow
whose jobs moved to another partition are still declared lost when their worker is
killed after it: their leases moved with them."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import YIELDING, Component, Stack, components, running_stack, worker
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.grow import grow_events_topics
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.pipeline import DESERIALIZE
from tests.support.stack import APP
from tests.support.waiting import wait_for

OLD, NEW = 6, 12
OWNER = "grow-events"
LEASE = "4s"
BEAT = ("--heartbeat", "500ms")


def moves(job_id: str) -> bool:
    return java_partition(job_id.encode(), OLD) != java_partition(job_id.encode(), NEW)


def victim_keys() -> list[str]:
    """Idempotency keys of runs killed after the grow: two whose job moves, one that stays."""
    keys = [f"victim-{n}" for n in range(100)]
    moved = [k for k in keys if moves(idempotent_job_id(OWNER, k))][:2]
    stays = [k for k in keys if not moves(idempotent_job_id(OWNER, k))][:1]
    return moved + stays


@dataclass
class Outcome:
    long: list[str]
    short: list[str] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)
    statuses: dict[str, JobStatus] = field(default_factory=dict)
    kinds: dict[str, Counter[str]] = field(default_factory=dict)
    status_log: str = ""
    seconds: float = 0.0


@pytest.fixture(scope="module")
def pipeline_topics(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Topics:
    settings = load_settings(bootstrap_servers=kafka_bootstrap,
                             topic_prefix=f"grow-events-{uuid.uuid4().hex[:8]}.",
                             timer_partitions=2, exec_partitions=2, events_partitions=OLD,
                             status_partitions=2, dlq_partitions=1)  # fmt: skip
    topics = Topics(settings)
    ensure_topics(settings.kafka_config, topics.specs())
    return topics


def request(key: str | None = None, **params: object) -> JobRequest:
    return JobRequest(job_type="data.process", owner=OWNER, params=params, idempotency_key=key)


def statuses_of(topics: Topics) -> dict[str, JobStatus]:
    return read_statuses(topics.settings, owner=OWNER)


def until(topics: Topics, ids: list[str], states: set[str], what: str,
          timeout_s: float = 60) -> dict[str, JobStatus]:  # fmt: skip
    def reached() -> dict[str, JobStatus] | None:
        found = statuses_of(topics)
        return found if all(j in found and found[j].state in states for j in ids) else None

    return wait_for(reached, timeout_s=timeout_s, interval_s=0.3, what=what)


def events_by_job(topics: Topics) -> dict[str, Counter[str]]:
    kinds: dict[str, Counter[str]] = {}
    with TopicScan(topics.settings, topics.events) as scan:
        for batch in scan:
            for message in batch:
                data = DESERIALIZE(message.value()).data
                kinds.setdefault(data["job_id"], Counter())[data["kind"]] += 1
    return kinds


@pytest.fixture(scope="module")
def outcome(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    topics = pipeline_topics
    settings = topics.settings
    base = free_ports(6)
    parts = components(base, app=APP, job_types=(), lease_s=4)
    parts.append(worker("data.process", "w0", base + 3, app=APP, concurrency=32, extra=BEAT))
    second = Component("status-processor-1", ("status-processor", "--instance-id", "1",
                                              "--lease", LEASE), base + 4, YIELDING)
    spare = worker("data.process", "w1", base + 5, app=APP, concurrency=8, extra=BEAT)
    home = tmp_path_factory.mktemp("stack")
    started = time.monotonic()
    with running_stack(settings, home, parts) as stack, JobClient(settings) as client:
        yield run(topics, stack, client, second, spare, started)


def run(topics: Topics, stack: Stack, client: JobClient, second: Component, spare: Component,
        started: float) -> Outcome:  # fmt: skip
    victims = client.submit_many([request(key, first_attempt_sleep_s=120, sleep_s=0)
                                  for key in victim_keys()])  # fmt: skip
    long = client.submit_many([request(sleep_s=8) for _ in range(12)])
    result = Outcome(long=long, victims=victims)
    result.short += client.submit_many([request(sleep_s=0.2) for _ in range(40)])
    until(topics, victims + long, {"RUNNING"}, "long runs started")
    stop = threading.Event()

    def load() -> None:  # short jobs throughout the grow, from the client's old metadata
        while not stop.wait(0.25):
            result.short.extend(client.submit_many([request(sleep_s=0.2) for _ in range(5)]))

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    try:
        time.sleep(1)
        grow_events_topics(topics.settings, NEW)
        stack.launch([second])
        time.sleep(4)
    finally:
        stop.set()
        loader.join(10)
    until(topics, long + result.short, {"SUCCEEDED"}, "every long and short job succeeded")
    stack.kill("worker-w0")  # the victims' runs die with it, after the grow
    stack.launch([spare])
    result.statuses = until(topics, victims + long + result.short, {"SUCCEEDED"},
                            "the killed runs retried and succeeded", timeout_s=90)
    result.kinds = events_by_job(topics)
    result.status_log = "".join((stack.home / "logs" / f"{name}.log").read_text()
                                for name in ("status-processor", "status-processor-1"))
    result.seconds = time.monotonic() - started
    print(result.status_log[-3000:])
    print(f"grow of jobs.events: {len(result.statuses)} jobs in {result.seconds:.0f} s")
    return result


def test_the_old_partitions_handed_jobs_over(outcome: Outcome) -> None:
    assert "settled for 12 partitions" in outcome.status_log
    assert any(moves(j) for j in outcome.long), "no long run moved: the grow was not exercised"


def test_every_job_succeeded_once_and_the_grow_lost_none(outcome: Outcome) -> None:
    for job_id in outcome.long + outcome.short:
        status, kinds = outcome.statuses[job_id], outcome.kinds.get(job_id, Counter())
        assert (status.state, status.attempt, status.duplicates) == ("SUCCEEDED", 1, 0), status
        assert kinds["LOST"] == 0 and kinds["DUPLICATE"] == 0, (job_id, kinds)


def test_a_run_killed_after_the_grow_is_declared_lost_once_where_its_job_moved(
    outcome: Outcome,
) -> None:
    for job_id in outcome.victims:
        status, kinds = outcome.statuses[job_id], outcome.kinds[job_id]
        assert kinds["LOST"] == 1, (job_id, moves(job_id), kinds)
        assert kinds["DUPLICATE"] == 0, kinds
        assert (status.state, status.attempt) == ("SUCCEEDED", 2), status
    assert sum(moves(j) for j in outcome.victims) == 2
