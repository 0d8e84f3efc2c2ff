"""Workflows at the timers, through the runtime's driver: real RocksDB, a controlled clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.clock import instant_of
from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import evolve, plain
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import step_job_id
from jobstream._pipeline.workflows.commands import step_ids, workflow_event
from tests.support.jobs import submitted
from tests.support.workflows import diamond, rebuilt, step, step_ended

SETTINGS = Settings(fire_lead=0)
"""Firing on the instant; test_fire_lead.py fires ahead."""
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
WF = "wf-diamond"


def ids(name: str, workflow_id: str = WF, owner: str = "tests") -> str:
    return step_job_id(owner, workflow_id, name)


def lifecycle(outputs: list[Output]) -> list[tuple[str, str]]:
    """(kind, job id) of the JobLifecycle outputs, executions as ("RUN", job id)."""
    found = []
    for output in outputs:
        value = output.value
        if isinstance(value, Event) and value.name == "JobLifecycle":
            found.append((value.data["kind"], value.data["job_id"]))
        elif isinstance(value, Event) and value.name == "ExecutionRequested":
            found.append(("RUN", value.data["job_id"]))
    return found


def data(outputs: list[Output], kind: str, job_id: str) -> dict[str, Any]:
    for output in outputs:
        value = output.value
        if isinstance(value, Event) and job_id == value.data.get("job_id") and kind in (
            value.name, value.data.get("kind")
        ):  # fmt: skip
            return value.data
    raise AssertionError(f"no {kind} of {job_id} in {lifecycle(outputs)}")


def dead_letters(outputs: list[Output]) -> list[str]:
    return [dict(o.headers or ())["jobstream.error"].decode() for o in outputs
            if o.topic == TOPICS.intake_dlq]  # fmt: skip


@pytest.fixture
def timers(tmp_path: Path) -> Iterator[ProcessorDriver[TimerState]]:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "a", now_ms=T0)
    yield driver
    driver.close()


def test_a_diamond_runs_each_step_once_its_parents_succeeded(
    timers: ProcessorDriver[TimerState],
) -> None:
    a, b, c, d = (ids(n) for n in "abcd")
    accepted = timers.pipe(TOPICS.intake, diamond(T0), key=WF.encode())
    assert lifecycle(accepted) == [("SCHEDULED", a), ("BLOCKED", b), ("BLOCKED", c),
                                   ("BLOCKED", d)]  # fmt: skip
    assert data(accepted, "BLOCKED", d)["waiting_for"] == [b, c]
    assert data(accepted, "BLOCKED", d)["step"] == "d"
    assert all(o.key == WF.encode() for o in accepted), "keyed by the workflow"

    assert lifecycle(timers.advance(1)) == [("RUN", a), ("FIRED", a)]
    assert timers.advance(60_000) == [], "the children wait for their parent, not the clock"

    released = timers.pipe(TOPICS.intake, step_ended(a, WF, "SUCCEEDED", T0 + 500, '{"rows":3}'))
    assert sorted(lifecycle(released)) == sorted([("SCHEDULED", b), ("SCHEDULED", c)])
    fired = timers.advance(0)  # siblings go in job id order
    assert sorted(lifecycle(fired)) == sorted([("RUN", b), ("FIRED", b), ("RUN", c), ("FIRED", c)])
    run_b = data(fired, "ExecutionRequested", b)
    assert [plain(r) for r in run_b["parent_results"]] == [{
        "job_id": a, "outcome": "SUCCEEDED", "result": '{"rows":3}', "result_uri": None,
        "step": "a",
    }]  # fmt: skip
    assert run_b["scheduled_at_ms"] == timers.now_ms, "due from when it became runnable"

    narrowed = timers.pipe(TOPICS.intake, step_ended(b, WF, "SUCCEEDED", T0 + 600, "1"))
    assert lifecycle(narrowed) == [("BLOCKED", d)]
    assert data(narrowed, "BLOCKED", d)["waiting_for"] == [c]
    assert timers.advance(1000) == []
    assert lifecycle(timers.pipe(TOPICS.intake, step_ended(c, WF, "SUCCEEDED", T0, "2"))) == [
        ("SCHEDULED", d)]  # fmt: skip
    last = timers.advance(0)
    assert lifecycle(last) == [("RUN", d), ("FIRED", d)]
    results = data(last, "ExecutionRequested", d)["parent_results"]
    assert [(r["step"], r["result"]) for r in results] == [("b", "1"), ("c", "2")]
    assert timers.advance(3_600_000) == [], "every step ran once"


def test_a_released_child_keeps_its_own_later_time(timers: ProcessorDriver[TimerState]) -> None:
    steps = [step("a"), step("b", "a", run_at=instant_of(T0 + 10_000))]
    timers.pipe(TOPICS.intake, workflow_event("tests", steps, now_ms=T0, workflow_id="wf"))
    timers.advance(1)
    released = timers.pipe(TOPICS.intake, step_ended(ids("a", "wf"), "wf", "SUCCEEDED", T0))
    assert data(released, "SCHEDULED", ids("b", "wf"))["scheduled_at_ms"] == T0 + 10_000
    assert timers.advance(9_000) == []
    assert lifecycle(timers.advance(1000))[0] == ("RUN", ids("b", "wf"))


def test_a_failed_parent_cancels_its_children_or_lets_them_run(
    timers: ProcessorDriver[TimerState],
) -> None:
    steps = [step("a"), step("strict", "a"), step("lenient", "a", on_parent_failure="run"),
             step("after-strict", "strict")]  # fmt: skip
    timers.pipe(TOPICS.intake, workflow_event("tests", steps, now_ms=T0, workflow_id="wf"))
    timers.advance(1)
    a, strict, lenient = ids("a", "wf"), ids("strict", "wf"), ids("lenient", "wf")
    ended = timers.pipe(TOPICS.intake, step_ended(a, "wf", "DEAD_LETTERED", T0 + 5))
    assert sorted(lifecycle(ended)) == sorted([("CANCELLED", strict), ("SCHEDULED", lenient)])
    assert data(ended, "CANCELLED", strict)["detail"] == f"parent {a} ended DEAD_LETTERED"
    run = data(timers.advance(0), "ExecutionRequested", lenient)
    assert run["parent_results"][0]["outcome"] == "DEAD_LETTERED"
    # The cancel comes back from the status processor as the end of "strict": it cascades.
    cascade = timers.pipe(TOPICS.intake, step_ended(strict, "wf", "CANCELLED", T0 + 6))
    assert lifecycle(cascade) == [("CANCELLED", ids("after-strict", "wf"))]
    assert timers.advance(60_000) == []


def test_the_same_end_read_twice_releases_once(timers: ProcessorDriver[TimerState]) -> None:
    timers.pipe(TOPICS.intake, diamond(T0))
    timers.advance(1)
    end = step_ended(ids("a"), WF, "SUCCEEDED", T0 + 1)
    assert len(lifecycle(timers.pipe(TOPICS.intake, end))) == 2
    assert timers.pipe(TOPICS.intake, end) == []


def test_cancelling_a_workflow_cancels_every_job_not_ended(
    timers: ProcessorDriver[TimerState],
) -> None:
    timers.pipe(TOPICS.intake, diamond(T0))
    timers.advance(1)  # a runs
    cancel = Event("WorkflowCancelled", {"workflow_id": WF, "owner": "tests",
                                         "requested_at_ms": T0, "reason": "no",
                                         "requested_by": "api:acme"})  # fmt: skip
    cancelled = timers.pipe(TOPICS.intake, cancel)
    assert sorted(lifecycle(cancelled)) == sorted(("CANCELLED", ids(n)) for n in "bcd")
    assert {data(cancelled, "CANCELLED", ids(n))["requested_by"] for n in "bcd"} == {"api:acme"}
    # a has fired: its run is stopped where a worker holds it.
    stop = [o for o in cancelled if o.topic == TOPICS.control]
    assert [o.value.data["job_id"] for o in stop] == [ids("a")]
    assert stop[0].key == WF.encode()
    assert (stop[0].value.data["reason"], stop[0].value.data["requested_by"]) == ("no", "api:acme")
    assert timers.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", T0 + 9)) == []
    assert timers.advance(60_000) == []
    late = submitted(now_ms=T0, run_at_ms=T0)
    late.data["workflow_id"] = WF
    assert "was cancelled" in dead_letters(timers.pipe(TOPICS.intake, late))[0]


def test_refused_workflows_and_parents_go_to_the_dead_letter_topic(
    timers: ProcessorDriver[TimerState],
) -> None:
    acyclic = diamond(T0, workflow_id="wf-cycle").data
    first, *others = acyclic.steps
    cyclic = Event.of(evolve(acyclic, steps=[evolve(first, depends_on=["d"]), *others]))
    assert dead_letters(timers.pipe(TOPICS.intake, cyclic)) == ["steps: cycle: a -> b -> d -> a"]
    orphan = submitted(now_ms=T0)
    orphan.data["workflow_id"] = "wf-2"
    orphan.data["spec"]["depends_on"] = [ids("a")]
    reason = dead_letters(timers.pipe(TOPICS.intake, orphan))[0]
    assert reason == f"spec.depends_on.0: {ids('a')} is not a job of tests's workflow wf-2"
    assert timers.advance(60_000) == [], "nothing of a refused record was kept"


def test_two_owners_naming_one_workflow_id_get_two_workflows(
    timers: ProcessorDriver[TimerState],
) -> None:
    ours, theirs = diamond(T0), workflow_event("bolt", [step("a")], now_ms=T0, workflow_id=WF)
    assert step_ids(theirs)["a"] != ids("a"), "a step's id is its owner's"
    assert lifecycle(timers.pipe(TOPICS.intake, ours))[0] == ("SCHEDULED", ids("a"))
    assert lifecycle(timers.pipe(TOPICS.intake, theirs)) == [("SCHEDULED", step_ids(theirs)["a"])]
    intruder = submitted(now_ms=T0, owner="bolt")
    intruder.data["workflow_id"] = WF
    intruder.data["spec"]["depends_on"] = [ids("a")]
    reason = dead_letters(timers.pipe(TOPICS.intake, intruder))[0]
    assert reason == f"spec.depends_on.0: {ids('a')} is not a job of bolt's workflow {WF}"

    timers.advance(1)  # both a's run
    ended = step_ended(step_ids(theirs)["a"], WF, "SUCCEEDED", T0 + 1, owner="bolt")
    assert lifecycle(timers.pipe(TOPICS.intake, ended)) == [], "releases nothing of ours"
    cancel = Event("WorkflowCancelled", {"workflow_id": WF, "owner": "bolt",
                                         "requested_at_ms": T0, "reason": None})  # fmt: skip
    timers.pipe(TOPICS.intake, cancel)
    released = timers.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", T0 + 2))
    assert sorted(lifecycle(released)) == [("SCHEDULED", ids("b")), ("SCHEDULED", ids("c"))], (
        "another owner's cancel of its own workflow of the same id leaves ours running"
    )

    ownerless = Event("WorkflowCancelled", {"workflow_id": WF, "owner": None,
                                            "requested_at_ms": T0, "reason": None})  # fmt: skip
    assert dead_letters(timers.pipe(TOPICS.intake, ownerless)) == ["owner: must be a string"]


def test_a_resubmitted_workflow_is_a_no_op(timers: ProcessorDriver[TimerState]) -> None:
    first = diamond(T0, workflow_id=None, idempotency_key="nightly-1")
    again = diamond(T0 + 5000, workflow_id=None, idempotency_key="nightly-1")
    assert step_ids(first) == step_ids(again)
    assert len(timers.pipe(TOPICS.intake, first)) == 4
    assert timers.pipe(TOPICS.intake, again) == []


def test_a_job_joins_a_workflow_after_its_parent_ended(timers: ProcessorDriver[TimerState]) -> None:
    parent = submitted(now_ms=T0)
    parent.data["workflow_id"] = "wf"
    timers.pipe(TOPICS.intake, parent)
    timers.advance(1)
    timers.pipe(TOPICS.intake, step_ended(parent.data["job_id"], "wf", "SUCCEEDED", T0 + 1))
    child = submitted(now_ms=T0)
    child.data["workflow_id"] = "wf"
    child.data["spec"]["depends_on"] = [parent.data["job_id"]]
    assert lifecycle(timers.pipe(TOPICS.intake, child)) == [("SCHEDULED", child.data["job_id"])]


def test_restoring_from_the_changelog_rebuilds_the_blocked_index(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    timers.pipe(TOPICS.intake, diamond(T0))
    timers.advance(1)
    timers.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", T0 + 1))
    timers.advance(0)  # b and c fire

    replica = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        for driver in (timers, replica):  # the original and the rebuilt one decide alike
            driver.pipe(TOPICS.intake, step_ended(ids("b"), WF, "SUCCEEDED", T0 + 2))
            outputs = driver.pipe(TOPICS.intake, step_ended(ids("c"), WF, "SUCCEEDED", T0 + 3))
            assert lifecycle(outputs) == [("SCHEDULED", ids("d"))]
            assert [r["step"] for r in data(driver.advance(0), "ExecutionRequested",
                                            ids("d"))["parent_results"]] == ["b", "c"]  # fmt: skip
    finally:
        replica.close()


def test_a_node_written_before_workflows_had_owners_is_skipped_on_restore(
    timers: ProcessorDriver[TimerState],
) -> None:
    old = b'{"workflow_id":"wf","job_id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","parents":[]}'
    key = b"n\x00\x02wf01ARZ3NDEKTSV4RRFFQ69G5FAV"
    tx = PartitionBatch(timers.store())
    timers.processor.restore(tx, key, old)
    assert tx.get(key) is None, "skipped: no owner, so no key of today would find it"
