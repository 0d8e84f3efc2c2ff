"""Recurring workflows and the end of workflows at the timers, through the runtime's driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.logic import TimerPolicy
from jobstream._pipeline.timers.nodes import NODE_PREFIX, workflow_key
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import RUN_LABEL, run_workflow_id
from jobstream._pipeline.workflows.commands import step_ids, workflow_event
from tests.support.jobs import submitted as submitted_job
from tests.support.workflows import diamond, rebuilt, step, step_ended

SETTINGS = Settings(fire_lead=0)
"""Firing on the instant; test_fire_lead.py fires ahead."""
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
MINUTE = 60_000
FIRST = (T0 // MINUTE + 1) * MINUTE
"""The first time of ``* * * * *`` after T0."""
SCHEDULE = "nightly"


@pytest.fixture
def timers(tmp_path: Path) -> Iterator[ProcessorDriver[TimerState]]:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "a", now_ms=T0)
    yield driver
    driver.close()


def recurring(**schedule: Any) -> Event:
    return workflow_event(
        "tests",
        [step("a"), step("b", "a")],
        now_ms=T0,
        workflow_id=SCHEDULE,
        schedule={"expression": "* * * * *", **schedule},
    )


def runs(outputs: list[Output]) -> list[dict[str, Any]]:
    return [o.value.data for o in outputs
            if isinstance(o.value, Event) and o.value.name == "WorkflowSubmitted"]  # fmt: skip


def run_to_end(timers: ProcessorDriver[TimerState], run: dict[str, Any]) -> list[Output]:
    """Admit a run, as its own partition's timers would, and end each of its steps."""
    timers.pipe(TOPICS.intake, Event("WorkflowSubmitted", run), key=run["workflow_id"].encode())
    outputs: list[Output] = []
    for job_id in step_ids(Event("WorkflowSubmitted", run)).values():
        outputs += timers.pipe(TOPICS.intake, step_ended(job_id, run["workflow_id"], "SUCCEEDED",
                                                         timers.now_ms))  # fmt: skip
    return outputs


def first_run(timers: ProcessorDriver[TimerState]) -> dict[str, Any]:
    """The schedule submitted, and the run it starts at its first time."""
    timers.pipe(TOPICS.intake, recurring())
    [run] = runs(timers.advance(FIRST - T0))
    return run


def node_keys(timers: ProcessorDriver[TimerState]) -> list[bytes]:
    return [key for key, _ in timers.store().scan(NODE_PREFIX, NODE_PREFIX + b"\xff")]


def test_each_time_of_the_schedule_submits_a_run_of_the_template(
    timers: ProcessorDriver[TimerState],
) -> None:
    assert runs(timers.pipe(TOPICS.intake, recurring())) == [], "a template runs nothing itself"
    assert timers.advance(FIRST - T0 - 1) == []
    [run] = runs(timers.advance(1))
    assert run["workflow_id"] == run_workflow_id(SCHEDULE, FIRST)
    assert (run["schedule_id"], run["schedule"]) == (SCHEDULE, None)
    assert [s["spec"]["labels"][RUN_LABEL] for s in run["steps"]] == [SCHEDULE, SCHEDULE]

    ended = run_to_end(timers, run)
    [end] = [o for o in ended if isinstance(o.value, Event) and o.value.name == "StepEnded"]
    assert (end.topic, end.key) == (TOPICS.intake, SCHEDULE.encode())
    assert (end.value.data["job_id"], end.value.data["outcome"]) == (run["workflow_id"],
                                                                     "SUCCEEDED")  # fmt: skip
    timers.pipe(TOPICS.intake, end.value, key=end.key)
    [second] = runs(timers.advance(MINUTE))
    assert second["workflow_id"] == run_workflow_id(SCHEDULE, FIRST + MINUTE)


def test_runs_do_not_overlap_unless_the_schedule_allows_it(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    run = first_run(timers)
    assert runs(timers.advance(MINUTE)) == [], "the first run has not ended"
    ended = run_to_end(timers, run)
    for output in ended:
        if output.topic == TOPICS.intake:
            timers.pipe(TOPICS.intake, output.value, key=output.key)
    assert len(runs(timers.advance(MINUTE))) == 1, "ended: the next time starts a run"

    allowing = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "b", now_ms=T0)
    try:
        allowing.pipe(TOPICS.intake, recurring(overlap="ALLOW"))
        assert len(runs(allowing.advance(FIRST - T0))) == 1
        assert len(runs(allowing.advance(MINUTE))) == 1, "overlap allowed"
    finally:
        allowing.close()


@pytest.mark.parametrize(("misfire", "started"), [("SKIP", 0), ("RUN_ONCE", 1)])
def test_times_missed_while_down_follow_the_misfire_policy(
    timers: ProcessorDriver[TimerState],
    misfire: str,
    started: int,
) -> None:
    timers.pipe(TOPICS.intake, recurring(expression="0 * * * *", misfire=misfire))
    down = 3 * 3_600_000 + 30 * MINUTE  # three times of the schedule missed by far
    assert len(runs(timers.advance(down))) == started


def test_cancelling_a_recurring_workflow_stops_its_runs(
    timers: ProcessorDriver[TimerState],
) -> None:
    timers.pipe(TOPICS.intake, recurring(overlap="ALLOW"))
    assert len(runs(timers.advance(FIRST - T0))) == 1
    cancel = Event("WorkflowCancelled", {"workflow_id": SCHEDULE, "owner": "tests",
                                         "requested_at_ms": T0, "reason": None})  # fmt: skip
    assert [o.topic for o in timers.pipe(TOPICS.intake, cancel)] == [TOPICS.events], (
        "its status only: the runs started go on"
    )
    assert runs(timers.advance(10 * MINUTE)) == []
    assert timers.pipe(TOPICS.intake, recurring()) == [], "the same workflow again: a no-op"


def test_a_schedule_is_checked_before_anything_is_kept() -> None:
    with pytest.raises(ValidationError) as refused:
        workflow_event("tests", [step("a")], now_ms=T0, schedule={"expression": "61 * * * *"})
    assert refused.value.field == "schedule.expression"
    event = workflow_event("tests", [step("a")], now_ms=T0, schedule="0 3 * * *")
    assert event.data["schedule"]["overlap"] == "SKIP", "runs do not overlap unless allowed"


def test_an_ended_workflow_forgets_its_nodes_and_stays_a_no_op(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    submitted = diamond(T0)
    timers.pipe(TOPICS.intake, submitted)
    assert len(node_keys(timers)) == 4
    for name, job_id in step_ids(submitted).items():
        timers.pipe(TOPICS.intake, step_ended(job_id, "wf-diamond", "SUCCEEDED", T0))
        assert len(node_keys(timers)) == (4 if name != "d" else 0)
    assert timers.pipe(TOPICS.intake, submitted) == [], "resubmitted: still a no-op"
    tombstones = [key for key, value in timers.changelog[0] if value is None]
    assert sum(key.startswith(NODE_PREFIX) for key in tombstones) == 4, "purged on the changelog"

    replica = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        assert node_keys(replica) == [], "a restore does not bring them back"
        assert replica.pipe(TOPICS.intake, submitted) == []
    finally:
        replica.close()

    timers.advance(TimerPolicy().marker_ttl_ms - 1)
    assert timers.store().get(workflow_key("tests", "wf-diamond")) is not None
    timers.advance(1)
    assert timers.store().get(workflow_key("tests", "wf-diamond")) is None, "forgotten after a week"
    assert timers.pipe(TOPICS.intake, submitted) != [], "and a new submission of it runs"


def test_a_job_added_to_a_workflow_keeps_its_nodes_until_it_ends_too(
    timers: ProcessorDriver[TimerState],
) -> None:
    submitted = diamond(T0)
    timers.pipe(TOPICS.intake, submitted)
    ids = step_ids(submitted)
    late = submitted_job(now_ms=T0)
    late.data["workflow_id"] = "wf-diamond"
    late.data["spec"]["depends_on"] = [ids["d"]]
    timers.pipe(TOPICS.intake, late)
    for job_id in ids.values():
        timers.pipe(TOPICS.intake, step_ended(job_id, "wf-diamond", "SUCCEEDED", T0))
    assert len(node_keys(timers)) == 5, "the added job has not ended"
    timers.advance(0)
    timers.pipe(TOPICS.intake, step_ended(late.data["job_id"], "wf-diamond", "SUCCEEDED", T0))
    assert node_keys(timers) == []


def test_a_restored_schedule_starts_the_same_runs(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    run = first_run(timers)
    replica = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        for driver in (timers, replica):  # the original and the rebuilt one decide alike
            assert runs(driver.advance(MINUTE)) == [], "the first run still runs"
            for output in run_to_end(driver, run):
                if output.topic == TOPICS.intake:
                    driver.pipe(TOPICS.intake, output.value, key=output.key)
            [second] = runs(driver.advance(MINUTE))
            assert second["workflow_id"] == run_workflow_id(SCHEDULE, FIRST + 2 * MINUTE)
    finally:
        replica.close()


def test_with_a_fire_lead_a_run_still_starts_on_its_time(tmp_path: Path) -> None:
    ahead = ProcessorDriver(TimerProcessor(Settings(fire_lead=500)), tmp_path / "c", now_ms=T0)
    try:
        ahead.pipe(TOPICS.intake, recurring())
        assert runs(ahead.advance(FIRST - 400 - T0)) == [], "its steps would be due at once"
        [run] = runs(ahead.advance(400))
        assert run["workflow_id"] == run_workflow_id(SCHEDULE, FIRST)
    finally:
        ahead.close()
