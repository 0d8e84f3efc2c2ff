"""A fleet-wide concurrency limit holds across worker processes and a worker's SIGKILL.

``data.process`` is limited to 3 runs at once (``JOBSTREAM_CONCURRENCY_LIMITS``) on six
execution partitions, so the timers route its jobs to partitions 0-2, one slot each.
Three worker processes of 4 threads each could run 12 at once; 60 jobs of 300 ms fall
due together, and one worker is killed with SIGKILL while it runs a job. From jobs.events
every run is an interval from its STARTED to its end (SUCCEEDED, FAILED, TIMED_OUT); a
run of the killed worker with no end ends at the kill: a killed process runs nothing
more, whatever the status processor later records (LOST, after the lease). The number of
runs overlapping at any instant never exceeds 3, and every job ends SUCCEEDED, those cut
by the kill after running again on another worker.

The kill is timed so that each run left open by it was running at the kill: the worker's
earlier runs all have their end on jobs.events, and its open ones started less than a
job's duration before (the handler sleeps 300 ms), so none had ended unreported.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from jobstream._ops.faults.groups import wait_assigned
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.overlap import Runs, most_at_once
from tests.support.reader import TopicReader
from tests.support.stack import APP, running_stack
from tests.support.waiting import wait_for

TYPE = "data.process"
LIMIT = 3
WORKERS = 3
JOBS = 60
SLEEP_S = 0.3


@pytest.fixture(scope="module")
def settings(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    limited = Settings(bootstrap_servers=kafka_bootstrap,
                       topic_prefix=f"limit-{tmp_path_factory.mktemp('x').name}.",
                       timer_partitions=2, exec_partitions=6, events_partitions=2,
                       status_partitions=2, dlq_partitions=1,
                       concurrency_limits={TYPE: LIMIT})  # fmt: skip
    ensure_topics(limited.kafka_config, Topics(limited).specs())
    return limited


@pytest.fixture(scope="module")
def stack(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    port = free_ports(3 + WORKERS)
    parts = components(port, app=APP, job_types=(), lease_s=3)
    parts += [worker(TYPE, f"w{i}", port + 3 + i, app=APP, concurrency=4,
                     extra=("--heartbeat", "500ms")) for i in range(WORKERS)]  # fmt: skip
    with running_stack(settings, tmp_path_factory.mktemp("stack"), parts,
                       JOBSTREAM_CONCURRENCY_LIMITS=f"{TYPE}={LIMIT}") as running:  # fmt: skip
        yield running


def test_most_at_once_counts_half_open_intervals() -> None:
    assert most_at_once([]) == 0
    assert most_at_once([(0, 10), (10, 20), (20, 30)]) == 1
    assert most_at_once([(0, 10), (5, 15), (9, 30), (14, 16)]) == 3


def kill_mid_run(stack: Stack, reader: TopicReader, runs: Runs) -> tuple[str, int]:
    """SIGKILL a worker at a moment when every run it leaves open is still running;
    the worker and the kill's instant (ms, once the process is gone)."""
    seen = 0

    def moment() -> str | None:
        nonlocal seen
        records = reader.poll()
        runs.add(records[seen:])
        seen = len(records)
        now = time.time() * 1000
        if len(runs.ended) < 6:  # some jobs done, most still to come
            return None
        for worker_id, open_runs in runs.open.items():
            if open_runs and all(now - start < SLEEP_S * 1000 - 50 for start in open_runs.values()):
                return worker_id
        return None

    victim = wait_for(moment, timeout_s=60, interval_s=0.005, what="a worker mid-run")
    stack.kill(f"worker-{victim}")
    return victim, int(time.time() * 1000)


def test_no_more_than_the_limit_run_at_once_through_a_worker_kill(
    stack: Stack, settings: Settings
) -> None:
    group = f"{settings.topic_prefix}jobstream.workers.{TYPE}"
    wait_assigned(settings, {group: WORKERS}, timeout_s=120)
    reader = TopicReader(settings, Topics(settings).events, settings.events_partitions)
    runs = Runs()
    try:
        fast = RetryPolicy(initial_backoff_ms=200, jitter=0, max_attempts=10)
        requests = [JobRequest(job_type=TYPE, owner="limits", params={"sleep_s": SLEEP_S},
                               retry=fast) for _ in range(JOBS)]  # fmt: skip
        with JobClient(settings) as client:
            ids = set(client.submit_many(requests))
        victim, killed_ms = kill_mid_run(stack, reader, runs)

        def all_succeeded() -> bool:
            found = read_statuses(settings, owner="limits")
            return sum(found[i].state == "SUCCEEDED" for i in ids if i in found) == JOBS

        wait_for(all_succeeded, timeout_s=240, interval_s=1, what="every job to succeed")
        records = reader.catch_up()
    finally:
        reader.close()

    runs = Runs(r for r in records if r["job_id"] in ids)
    cut = runs.open.pop(victim)
    assert cut, "the killed worker was running nothing"
    assert not any(runs.open.values()), f"runs of live workers never ended: {dict(runs.open)}"
    intervals = runs.intervals + [(start, killed_ms) for start in cut.values()]
    assert most_at_once(intervals) == LIMIT, sorted(intervals)
    workers = {worker_id for worker_id, _, _ in runs.ended}
    assert victim in workers and len(workers) >= 2, workers
    # Each job cut by the kill ran again elsewhere: retried after its lease expired
    # (LOST), or its uncommitted record run by its partition's next owner, whichever
    # came first.
    job_of = {r["execution_id"]: r["job_id"] for r in records if r["kind"] == "STARTED"}
    again = {r["job_id"] for r in records if r["kind"] == "STARTED"
             and r["worker_id"] != victim and r["at_ms"] > killed_ms}  # fmt: skip
    assert {job_of[execution] for execution in cut} <= again
