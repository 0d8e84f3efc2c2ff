"""Waiting on a running workflow, and reading what its steps did from jobs.events.

Every assertion on order is made from jobs.events: a worker's STARTED carries the instant
the handler began, a SUCCEEDED the instant the handler's outcome was decided.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import WorkflowSubmission
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

Events = dict[str, list[dict[str, Any]]]
"""JobLifecycle records of a workflow's steps, by step name."""


def settle(settings: Settings, submitted: WorkflowSubmission, states: dict[str, set[str]],
           *, owner: str, timeout_s: float = 120) -> dict[str, JobStatus]:  # fmt: skip
    """Wait until each named step is in one of its states; the statuses by step name."""
    ids = submitted.steps

    def reached() -> dict[str, JobStatus]:
        found = read_statuses(settings, owner=owner)
        done = all(ids[name] in found and found[ids[name]].state in expected
                   for name, expected in states.items())  # fmt: skip
        return {name: found[ids[name]] for name in ids if ids[name] in found} if done else {}

    return wait_for(reached, timeout_s=timeout_s, interval_s=0.5, what=f"steps in {states}")


def history(settings: Settings, submitted: WorkflowSubmission) -> Events:
    """Every JobLifecycle of the workflow's steps, by step name."""
    names = {job_id: name for name, job_id in submitted.steps.items()}
    reader = TopicReader(settings, Topics(settings).events, settings.events_partitions)
    try:
        found: Events = defaultdict(list)
        for record in reader.catch_up():
            if record.get("job_id") in names:
                found[names[record["job_id"]]].append(record)
        return found
    finally:
        reader.close()


def _instants(events: Events, kind: str) -> dict[str, list[int]]:
    return {name: [e["at_ms"] for e in evs if e["kind"] == kind] for name, evs in events.items()}


def assert_ran_in_order(events: Events, parents: Mapping[str, Sequence[str]],
                        ran: Collection[str]) -> None:  # fmt: skip
    """Each step of ``ran`` started exactly once, after every parent succeeded; the others
    never started."""
    starts = _instants(events, "STARTED")
    for name in ran:
        assert len(starts.get(name, [])) == 1, f"{name} started {starts.get(name)}"
        assert not any(e["kind"] == "DUPLICATE" for e in events[name]), name
    assert_released_after_parents(events, parents)
    for name in set(events) - set(ran):
        assert starts.get(name, []) == [], f"{name} should never have run"


def assert_released_after_parents(events: Events, parents: Mapping[str, Sequence[str]]) -> None:
    """Every step was fired once per attempt, and no run of it started before each of its
    parents had succeeded (the parent's first SUCCEEDED: a later one is a second run's)."""
    starts, succeeded = _instants(events, "STARTED"), _instants(events, "SUCCEEDED")
    for name, evs in events.items():
        fired = Counter(e["attempt"] for e in evs if e["kind"] == "FIRED")
        assert all(n == 1 for n in fired.values()), f"{name} fired {fired}"
        for parent in parents.get(name, []):
            if starts.get(name):
                assert succeeded.get(parent), f"{name} ran, its parent {parent} never succeeded"
                assert min(starts[name]) >= min(succeeded[parent]), f"{name} before {parent}"
