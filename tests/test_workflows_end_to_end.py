"""Workflows through the whole pipeline as processes, against the real broker.

Every assertion on order is made from jobs.events (tests/support/workflow_runs.py): each
step starts once, and never before every parent's SUCCEEDED.
"""

from __future__ import annotations

import itertools
import time
from functools import partial
from typing import Any

import orjson
import pytest

from jobstream._ops.stack import Stack
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.client import JobClient, WorkflowSubmission
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import Event, evolve
from jobstream._pipeline.status.query import read_statuses, workflow_table
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import RUN_LABEL, run_workflow_id, step_job_id
from jobstream._pipeline.workflows.commands import workflow_event
from tests.support.pipeline import SERIALIZE
from tests.support.reader import TopicReader
from tests.support.stack import pipeline_fixtures
from tests.support.waiting import wait_for
from tests.support.workflow_runs import assert_ran_in_order, history
from tests.support.workflow_runs import settle as settle_as

OWNER = "wf-e2e"
settle = partial(settle_as, owner=OWNER)


pipeline_topics, stack = pipeline_fixtures("wf", lease_s=3)


def step(name: str, *parents: str, **params: Any) -> dict[str, Any]:
    policy = params.pop("on_parent_failure", "CANCEL")
    return {"name": name, "depends_on": list(parents), "job_type": "data.process",
            "params": {"echo_parents": True, **params}, "on_parent_failure": policy}  # fmt: skip


def test_a_diamond_passes_results_along_in_dependency_order(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    steps = [step("a", sleep_s=1), step("b", "a"), step("c", "a", sleep_s=0.5),
             step("d", "b", "c")]  # fmt: skip
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER)
    blocked = settle(settings, submitted, {"d": {"BLOCKED"}})
    assert set(blocked["d"].waiting_for) <= {submitted.steps["b"], submitted.steps["c"]}

    done = settle(settings, submitted, {name: {"SUCCEEDED"} for name in "abcd"})
    assert orjson.loads(done["d"].result or "") == {"attempt": 1, "parents": {
        "b": ["SUCCEEDED", {"attempt": 1, "parents": {"a": ["SUCCEEDED", {"attempt": 1,
                                                                          "parents": {}}]}}],
        "c": ["SUCCEEDED", {"attempt": 1, "parents": {"a": ["SUCCEEDED", {"attempt": 1,
                                                                          "parents": {}}]}}],
    }}  # fmt: skip
    events = history(settings, submitted)
    assert_ran_in_order(events, {"b": ["a"], "c": ["a"], "d": ["b", "c"]}, set("abcd"))
    view = read_statuses(settings, workflow_id=submitted.workflow_id)
    assert sorted(s.step or "" for s in view.values()) == ["a", "b", "c", "d"]
    assert workflow_table(view).row_count == 4

    with JobClient(settings) as client:  # the same workflow again: nothing new runs
        again = client.submit_workflow(steps, owner=OWNER, workflow_id=submitted.workflow_id)
    assert again == submitted
    wait_for(lambda: len(read_statuses(settings, owner=OWNER)) >= 4, what="statuses")
    assert sum(e["kind"] == "STARTED" for evs in history(settings, submitted).values()
               for e in evs) == 4  # fmt: skip


def test_a_fan_out_of_1000_and_a_fan_in_back_to_one(stack: Stack,
                                                    pipeline_topics: Topics) -> None:  # fmt: skip
    settings = pipeline_topics.settings
    leaves = [f"leaf-{i:04}" for i in range(1000)]
    steps = [step("root"), *(step(leaf, "root", echo_parents=False) for leaf in leaves),
             step("sink", *leaves, echo_parents=False)]  # fmt: skip
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER, idempotency_key="fan-1000")
    settle(settings, submitted, {"sink": {"SUCCEEDED"}}, timeout_s=300)
    events = history(settings, submitted)
    assert_ran_in_order(events, {**{leaf: ["root"] for leaf in leaves}, "sink": leaves},
                        {"root", "sink", *leaves})  # fmt: skip
    fired = [e for e in events["sink"] if e["kind"] == "FIRED"]
    # Fired as its last parent ends, not at a later pass: how soon is the workflow bench's
    # release lateness (ops/bench/workflow_load.py), not a bound for a loaded machine.
    assert len(fired) == 1 and fired[0]["lateness_ms"] < 30_000, "fired once runnable"


def test_a_chain_of_50_runs_one_step_after_the_other(stack: Stack,
                                                     pipeline_topics: Topics) -> None:  # fmt: skip
    settings = pipeline_topics.settings
    names = [f"link-{i:02}" for i in range(50)]
    links = list(itertools.pairwise(names))
    steps = [
        step(names[0], echo_parents=False),
        *(step(name, parent, echo_parents=False) for parent, name in links),
    ]
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER)
    settle(settings, submitted, {names[-1]: {"SUCCEEDED"}}, timeout_s=240)
    events = history(settings, submitted)
    assert_ran_in_order(events, {name: [parent] for parent, name in links}, set(names))
    starts = [next(e["at_ms"] for e in events[name] if e["kind"] == "STARTED") for name in names]
    assert starts == sorted(starts), "each link starts after the one before it"


def test_a_failing_parent_cancels_or_runs_its_children_by_policy(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    steps = [
        step("parent", non_retryable=True),
        step("strict", "parent"),
        step("lenient", "parent", on_parent_failure="run"),
        step("grandchild", "strict"),
    ]
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER)
    done = settle(
        settings,
        submitted,
        {
            "parent": {"DEAD_LETTERED"},
            "strict": {"CANCELLED"},
            "lenient": {"SUCCEEDED"},
            "grandchild": {"CANCELLED"},
        },
    )
    assert orjson.loads(done["lenient"].result or "")["parents"] == {
        "parent": ["DEAD_LETTERED", None]}  # fmt: skip
    events = history(settings, submitted)
    [cancel] = [e for e in events["strict"] if e["kind"] == "CANCELLED"]
    assert cancel["detail"] == f"parent {submitted.steps['parent']} ended DEAD_LETTERED"
    assert_ran_in_order(events, {}, {"parent", "lenient"})


def test_cancelling_a_workflow_mid_run_cancels_what_has_not_ended(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    steps = [step("a", sleep_s=3), step("b", "a"), step("c", "a"), step("d", "b", "c")]
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER)
        settle(settings, submitted, {"a": {"RUNNING"}})
        client.cancel_workflow(OWNER, submitted.workflow_id, reason="not needed")
    done = settle(settings, submitted, {name: {"CANCELLED"} for name in "abcd"})
    cancelled = done["a"].cancellation
    assert cancelled is not None and cancelled.reason == "not needed", "the running step too"
    assert cancelled.worker_id is not None, "stopped by the worker that ran it"
    assert_ran_in_order(history(settings, submitted), {}, {"a"})


def test_a_cycle_is_refused_by_the_client_and_by_the_timers(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    cyclic = [step("a", "c"), step("b", "a"), step("c", "b")]
    with JobClient(settings) as client, pytest.raises(ValidationError) as refused:
        client.submit_workflow(cyclic, owner=OWNER)
    assert str(refused.value) == "steps: cycle: a -> b -> c -> a"

    # The same record from another client reaches the timers, which dead-letter it.
    event = workflow_event(OWNER, [step("a"), step("b", "a"), step("c", "b")], now_ms=_now(),
                           workflow_id="wf-cyclic")  # fmt: skip
    first, *rest = event.data.steps
    event = Event.of(evolve(event.data, steps=[evolve(first, depends_on=["c"]), *rest]))
    producer = clients.producer(settings)
    producer.produce(pipeline_topics.intake, SERIALIZE(event), b"wf-cyclic")
    assert producer.flush(30) == 0
    dlq = TopicReader(settings, pipeline_topics.intake_dlq, settings.dlq_partitions)
    try:
        reasons = wait_for(lambda: _reasons(dlq), timeout_s=60, what="the dead letter")
    finally:
        dlq.consumer.close()
    assert "steps: cycle: a -> b -> c -> a" in reasons


def test_two_owners_naming_one_workflow_id_each_run_their_own(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    steps = [step("extract"), step("load", "extract")]
    other = "wf-e2e-other"
    with JobClient(settings) as client:
        ours = client.submit_workflow(steps, owner=OWNER, workflow_id="payroll-2026")
        theirs = client.submit_workflow(steps, owner=other, workflow_id="payroll-2026")
    assert set(ours.steps.values()).isdisjoint(theirs.steps.values())
    settle(settings, ours, {"extract": {"SUCCEEDED"}, "load": {"SUCCEEDED"}})
    settle_as(settings, theirs, {"extract": {"SUCCEEDED"}, "load": {"SUCCEEDED"}}, owner=other)

    # Another owner's job naming a step of ours as parent, from a plain Kafka client.
    intruder = JobRequest(job_type="data.process", owner=other, workflow_id="payroll-2026",
                          depends_on=(ours.steps["extract"],)).to_event(_now())  # fmt: skip
    producer = clients.producer(settings)
    producer.produce(pipeline_topics.intake, SERIALIZE(intruder), b"payroll-2026")
    assert producer.flush(30) == 0
    dlq = TopicReader(settings, pipeline_topics.intake_dlq, settings.dlq_partitions)
    expected = (f"spec.depends_on.0: {ours.steps['extract']} is not a job of {other}'s "
                "workflow payroll-2026")  # fmt: skip
    try:
        wait_for(lambda: expected in _reasons(dlq), timeout_s=60, what="the dead letter")
    finally:
        dlq.consumer.close()


def _reasons(reader: TopicReader) -> list[str]:
    found = []
    for message in reader.consumer.consume(100, timeout=0.5):
        if message.error() is None:
            found.append(dict(message.headers() or [])["jobstream.error"].decode())
    return found


def _now() -> int:
    return time.time_ns() // 1_000_000


RECURRING_STEPS = [step("extract", sleep_s=0.5), step("load", "extract")]


@pytest.fixture(scope="module", autouse=True)
def every_minute(stack: Stack, pipeline_topics: Topics) -> tuple[int, WorkflowSubmission]:
    """A recurring workflow submitted as the module starts, whose first run the module's
    last test waits for: the other tests run while its minute comes."""
    with JobClient(pipeline_topics.settings) as client:
        submitted_at = _now()
        schedule = client.submit_workflow(RECURRING_STEPS, owner=OWNER, schedule="* * * * *")
    return submitted_at, schedule


def test_a_recurring_workflow_starts_a_run_at_its_next_minute(
    stack: Stack,
    pipeline_topics: Topics,
    every_minute: tuple[int, WorkflowSubmission],
) -> None:
    settings = pipeline_topics.settings
    steps = RECURRING_STEPS
    submitted_at, schedule = every_minute
    assert schedule.steps == {}, "a template's steps are no jobs"
    # Its first time is the minute after the timers read it, this minute's end or the next.
    minute = (submitted_at // 60_000 + 1) * 60_000
    runs = {run_workflow_id(schedule.workflow_id, at): at for at in (minute, minute + 60_000)}

    def started() -> str | None:
        found = read_statuses(settings, owner=OWNER)
        return next((s.workflow_id for s in found.values() if s.workflow_id in runs), None)

    run_id = wait_for(started, timeout_s=150, interval_s=1, what="the first run")
    run = WorkflowSubmission(run_id, {s["name"]: step_job_id(OWNER, run_id, s["name"])
                                      for s in steps})  # fmt: skip
    settle(settings, run, {"extract": {"SUCCEEDED"}, "load": {"SUCCEEDED"}})
    events = history(settings, run)
    [start] = [e for e in events["load"] if e["kind"] == "STARTED"]
    assert start["execution"]["spec"]["labels"][RUN_LABEL] == schedule.workflow_id
    assert_ran_in_order(events, {"load": ["extract"]}, {"extract", "load"})
    [fired] = [e for e in events["extract"] if e["kind"] == "FIRED"]
    assert fired["at_ms"] >= runs[run_id], "not before its time"
    with JobClient(settings) as client:
        # No more runs in this module's pipeline.
        client.cancel_workflow(OWNER, schedule.workflow_id)
