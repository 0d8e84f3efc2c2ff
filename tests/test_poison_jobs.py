"""A handler that kills its worker process, as an operator meets it: the worker is
restarted by a supervisor each time it dies, ordinary jobs of the same type beside it.
Every start counts as an attempt, so the poison job ends after its attempts and the
others succeed, each run at most twice (docs/reliability.md)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import RestartBackoff, Stack, components
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.topics import Topics
from tests.support.reader import events_of
from tests.support.stack import APP, running_stack, settled, topics_fixture

LEASE_S = 3


pipeline_topics = topics_fixture("poison")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    parts = components(free_ports(4), app=APP, job_types=("data.process",), lease_s=LEASE_S,
                       heartbeat_s=0.5)  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


def test_a_job_that_kills_its_worker_ends_after_its_attempts_and_the_others_succeed(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    deaths: Counter[str] = Counter()
    stop = threading.Event()
    supervisor = threading.Thread(target=stack.supervise, daemon=True, kwargs={
        "stop": stop, "on_exit": lambda name, code, delay: deaths.update([name]),
        "backoff": RestartBackoff(first_s=0.5, max_s=1.0)})  # fmt: skip
    supervisor.start()
    retry = RetryPolicy(max_attempts=3, initial_backoff_ms=200, jitter=0)
    poison = JobRequest(job_type="data.process", owner="e2e", retry=retry,
                        params={"kill_process": True, "sleep_s": 0.5})  # fmt: skip
    good = [JobRequest(job_type="data.process", owner="e2e", retry=retry,
                       params={"sleep_s": 1, "n": n}) for n in range(5)]  # fmt: skip
    try:
        with JobClient(settings) as client:
            ids = dict(zip(["poison", *(f"good-{n}" for n in range(5))],
                           client.submit_many([poison, *good]), strict=True))  # fmt: skip
        wanted = {label: {"SUCCEEDED"} for label in ids} | {"poison": {"DEAD_LETTERED"}}
        done = settled(settings, "e2e", ids, wanted, timeout_s=150)
    finally:
        stop.set()
        supervisor.join(10)

    assert done["poison"].attempt == 3
    assert done["poison"].last_error is not None
    assert done["poison"].last_error.error_type == "LeaseExpired"
    poison_events = events_of(settings, ids["poison"])
    assert [e["kind"] for e in poison_events].count("STARTED") == 3, "one start per attempt"
    assert [e["kind"] for e in poison_events].count("LOST") == 3
    assert deaths == {"worker-data.process-0": 3}, "the worker died once per attempt"
    for label in ids.keys() - {"poison"}:
        starts = [e for e in events_of(settings, ids[label]) if e["kind"] == "STARTED"]
        assert 1 <= len(starts) <= 2, f"{label} ran {len(starts)} times"
        assert [e["attempt"] for e in starts] == list(range(1, len(starts) + 1)), (
            f"{label}: a second run is the job's next attempt, recorded as such"
        )
