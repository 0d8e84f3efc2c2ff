"""Debounce and singleton keys through the whole pipeline as processes, on the real broker
and the package's stack (conftest.py): a burst of one
debounce key runs once, after its window, with the last params, every submission on
record as joined; a singleton key drops a new job while its job runs (DROP), or queues it
behind, the latest waiting one replacing an earlier one (REPLACE)."""

from __future__ import annotations

from typing import Any

from jobstream._ops.stack import Stack
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

WINDOW_MS = 1500


class Events:
    """jobs.events as read so far, by job id (one reader for the module's waits)."""

    def __init__(self, topics: Topics) -> None:
        settings = topics.settings
        self.reader = TopicReader(settings, topics.events, settings.events_partitions)
        self.by_job: dict[str, list[dict[str, Any]]] = {}
        self.read = 0

    def of(self, job_id: str) -> list[dict[str, Any]]:
        records = self.reader.poll()
        for record in records[self.read :]:
            self.by_job.setdefault(record["job_id"], []).append(record)
        self.read = len(records)
        return self.by_job.get(job_id, [])

    def kinds(self, job_id: str) -> list[str]:
        return [e["kind"] for e in self.of(job_id)]

    def first(self, job_id: str, kind: str, timeout_s: float = 30) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            return next((e for e in self.by_job.get(job_id, []) if e["kind"] == kind), None)

        def found() -> dict[str, Any] | None:
            return seen() or next((e for e in self.of(job_id) if e["kind"] == kind), None)

        return wait_for(found, timeout_s=timeout_s, interval_s=0.1, what=f"{kind} of {job_id}")


def request(n: int, keys: dict[str, Any], **params: Any) -> JobRequest:
    return JobRequest(job_type="data.process", owner="collapse", params={"n": n, **params},
                      keys=keys)  # fmt: skip


def test_a_burst_of_one_debounce_key_runs_once_after_the_window_with_the_last_params(
    stack: Stack, pipeline_topics: Topics
) -> None:
    events = Events(pipeline_topics)
    keys = {"debounce": {"key": "customer-42", "window_ms": WINDOW_MS}}
    with JobClient(pipeline_topics.settings) as client:
        ids = [client.submit(request(n, keys)) for n in range(50)]
    collapsed = [events.first(job_id, "COLLAPSED") for job_id in ids]
    runs = {e["joined_job_id"] for e in collapsed}
    assert len(runs) == 1, f"one run for the burst, not {len(runs)}"
    (run_id,) = runs
    assert run_id not in ids
    started = events.first(run_id, "STARTED")
    assert started["execution"]["spec"]["params"] == '{"n":49}', "the last one's params"
    last_joined = max(e["at_ms"] for e in collapsed)
    scheduled = events.first(run_id, "SCHEDULED")
    assert scheduled["at_ms"] >= last_joined + WINDOW_MS, "after the window"
    events.first(run_id, "SUCCEEDED")
    assert events.kinds(run_id).count("STARTED") == 1
    events.of(run_id)  # read up to the run's end: any event of the 50 came before it
    assert all([e["kind"] for e in events.by_job[job_id]] == ["COLLAPSED"]
               for job_id in ids), "none ran itself"  # fmt: skip

    def joined() -> dict[str, JobStatus] | None:
        found = read_statuses(pipeline_topics.settings, owner="collapse")
        shown = {job_id: found[job_id] for job_id in ids if job_id in found}
        return shown if len(shown) == len(ids) else None

    statuses = wait_for(joined, timeout_s=30, what="the 50 in jobs.status")
    assert {(s.state, s.joined_job_id) for s in statuses.values()} == {("COLLAPSED", run_id)}
    assert statuses[ids[0]].keys == {"debounce": {"key": "customer-42", "window_ms": WINDOW_MS,
                                                  "max_delay_ms": 10 * WINDOW_MS,
                                                  "keep": "LAST"}}  # fmt: skip


def test_a_singleton_job_drops_a_new_one_while_it_runs(
    stack: Stack, pipeline_topics: Topics
) -> None:
    events = Events(pipeline_topics)
    keys = {"singleton": {"key": "nightly-report"}}
    with JobClient(pipeline_topics.settings) as client:
        first = client.submit(request(1, keys, sleep_s=1))
        events.first(first, "STARTED")
        dropped = client.submit(request(2, keys))
        assert events.first(dropped, "COLLAPSED")["joined_job_id"] == first
        events.first(first, "SUCCEEDED")
        # Its end reaches the key's timers (the status processor's SingletonEnded): free.
        after = wait_for(lambda: _ran(client, events, request(3, keys)), timeout_s=30,
                         interval_s=0.2, what="a job of the freed key")  # fmt: skip
    assert events.kinds(dropped) == ["COLLAPSED"]
    assert events.first(after, "SUCCEEDED")


def _ran(client: JobClient, events: Events, job: JobRequest) -> str | None:
    """Submit ``job``: its id if it was let through (SCHEDULED), None if dropped."""
    job_id = client.submit(job)

    def decided() -> str | None:
        kinds = events.kinds(job_id)
        return kinds[0] if kinds else None

    first = wait_for(decided, timeout_s=10, interval_s=0.1, what=f"{job_id} decided")
    return job_id if first == "SCHEDULED" else None


def test_a_singleton_replace_queues_the_latest_behind_the_running_job(
    stack: Stack, pipeline_topics: Topics
) -> None:
    events = Events(pipeline_topics)
    keys = {"singleton": {"key": "sync-inventory", "mode": "REPLACE"}}
    with JobClient(pipeline_topics.settings) as client:
        running = client.submit(request(1, keys, sleep_s=1.5))
        events.first(running, "STARTED")
        replaced = client.submit(request(2, keys))
        events.first(replaced, "HELD")
        latest = client.submit(request(3, keys))
    assert events.first(replaced, "COLLAPSED")["joined_job_id"] == latest
    started = events.first(latest, "STARTED")
    ended = events.first(running, "SUCCEEDED")
    assert started["at_ms"] >= ended["at_ms"], "one at a time"
    assert started["execution"]["spec"]["params"] == '{"n":3}'
    events.first(latest, "SUCCEEDED")
    assert "STARTED" not in events.kinds(replaced)
    shown = wait_for(lambda: read_statuses(pipeline_topics.settings, job_id=replaced).get(replaced),
                     timeout_s=30, what="the replaced one in jobs.status")  # fmt: skip
    assert (shown.state, shown.joined_job_id) == ("COLLAPSED", latest), shown
