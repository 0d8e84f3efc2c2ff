"""Concurrency and rate keys on the broker, every component a process, on the package's stack
(conftest.py).

Concurrency: ``data.process`` jobs keyed ``customer-42`` with a limit of 2 run across two
worker processes (4 threads each) on two execution partitions: the timers route every job
of the key to the one partition its key chooses, so its jobs meet at the one worker that
owns it. From jobs.events, each run is its STARTED to its end; at most 2 of the key
overlap at any instant (and 2 do), each of the others is HELD once, behind the key's runs.
A job of another key routed to the same partition, submitted after the 20, starts while
the key's jobs still queue: the records parked behind the key do not hold it back.

Rate: 10 jobs with ``rate: 5/s`` due at once fire at the key's rate after its burst (3):
the k-th FIRED no sooner than (k - 3) / 5 s after the first, and those held carry
``throttled_ms``. docs/adr/0008-concurrency-keys.md, docs/keys.md.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobstream._ops.stack import Stack
from jobstream._pipeline.concurrency import keyed_partition
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.keys import Keys, scoped
from jobstream._pipeline.topics import Topics
from tests.support.overlap import Runs, most_at_once
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

TYPE = "data.process"
OWNER = "keys"
HOT, OTHER = "customer-42", "customer-8"  # both on partition 1 of 2 (asserted below)
JOBS, LIMIT, SLEEP_S = 20, 2, 0.4


@pytest.fixture
def events(settings: Settings, stack: Stack) -> Iterator[TopicReader]:
    reader = TopicReader(settings, Topics(settings).events, settings.events_partitions)
    yield reader
    reader.close()


def keyed(key: str, sleep_s: float = SLEEP_S) -> JobRequest:
    keys = Keys.model_validate({"concurrency": {"key": key, "limit": LIMIT}})
    return JobRequest(job_type=TYPE, owner=OWNER, params={"sleep_s": sleep_s}, keys=keys)


def test_a_key_runs_at_most_its_limit_across_workers_and_holds_no_other_key_back(
    settings: Settings, events: TopicReader
) -> None:
    assert keyed_partition(scoped(OWNER, HOT), 2) == keyed_partition(scoped(OWNER, OTHER), 2)
    with JobClient(settings) as client:
        hot = set(client.submit_many([keyed(HOT) for _ in range(JOBS)]))
        [other] = client.submit_many([keyed(OTHER, sleep_s=0)])

    def ended() -> bool:
        done = {r["job_id"] for r in events.poll() if r["kind"] == "SUCCEEDED"}
        return hot | {other} <= done

    wait_for(ended, timeout_s=120, interval_s=0.2, what="every keyed job to succeed")
    seen = events.records
    records = [r for r in seen if r["job_id"] in hot]
    runs = Runs(records)
    assert not any(runs.open.values())
    assert most_at_once(runs.intervals) == LIMIT, sorted(runs.intervals)
    held = [r for r in records if r["kind"] == "HELD"]
    assert held and {r["held_by"] for r in held} == {f"concurrency:{HOT}"}
    assert len({r["execution_id"] for r in held}) == len(held), "one HELD per parked record"
    assert all(0 < len(r["waiting_for"]) <= LIMIT and set(r["waiting_for"]) <= hot
               for r in held)  # fmt: skip
    starts = sorted(r["at_ms"] for r in records if r["kind"] == "STARTED")
    [other_start] = [r["at_ms"] for r in seen if r["job_id"] == other and r["kind"] == "STARTED"]
    assert other_start < starts[-LIMIT], "the other key waited for the key's queue"


def test_a_rate_key_fires_at_its_rate(settings: Settings, events: TopicReader) -> None:
    keys = Keys.model_validate({"rate": {"key": "partner-api", "rate": "5/s"}})
    with JobClient(settings) as client:
        requests = [JobRequest(job_type=TYPE, owner=OWNER, keys=keys, params={"sleep_s": 0})
                    for _ in range(10)]  # fmt: skip
        ids = set(client.submit_many(requests))

    def fired() -> list[dict] | None:
        found = [r for r in events.poll() if r["kind"] == "FIRED" and r["job_id"] in ids]
        return found if len(found) == len(ids) else None

    seen = wait_for(fired, timeout_s=60, interval_s=0.2, what="every rate-keyed job to fire")
    times = sorted(r["at_ms"] for r in seen)
    for k, at in enumerate(times):  # a burst of 3 (half a second), then one per 200 ms
        assert at - times[0] >= (k - 2) * 200, (k, [t - times[0] for t in times])
    assert sum(r["throttled_ms"] is not None for r in seen) >= 5
    assert all(r["throttled_ms"] <= r["lateness_ms"] for r in seen if r["throttled_ms"])
