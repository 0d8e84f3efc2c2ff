"""Pausing, resuming, updating and triggering a recurring workflow at the timers, and the
status events they send for it, through the runtime's driver on a real RocksDB store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.lifecycle import SCHEDULE_JOB_TYPE
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import run_workflow_id
from jobstream._pipeline.workflows.commands import step_ids, workflow_event
from jobstream._pipeline.workflows.ids import schedule_job_id
from jobstream._pipeline.workflows.schedule_commands import (
    pause_workflow_event,
    resume_workflow_event,
    trigger_workflow_event,
    update_workflow_event,
)
from tests.support.workflows import rebuilt, step, step_ended

SETTINGS = Settings(fire_lead=0)
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
MINUTE = 60_000
FIRST = (T0 // MINUTE + 1) * MINUTE
"""The first time of ``* * * * *`` after T0."""
OWNER, SCHEDULE = "tests", "nightly"
STATUS_ID = schedule_job_id(OWNER, SCHEDULE)


@pytest.fixture
def timers(tmp_path: Path) -> Iterator[ProcessorDriver[TimerState]]:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "a", now_ms=T0)
    driver.pipe(TOPICS.intake, workflow_event(OWNER, [step("a"), step("b", "a")], now_ms=T0,
                                              workflow_id=SCHEDULE,
                                              schedule="* * * * *"))  # fmt: skip
    yield driver
    driver.close()


def runs(outputs: list[Output]) -> list[dict[str, Any]]:
    return [o.value.data for o in outputs
            if isinstance(o.value, Event) and o.value.name == "WorkflowSubmitted"]  # fmt: skip


def status(outputs: list[Output]) -> list[Any]:
    """The JobLifecycle events of the workflow's own status, in order."""
    found = [o.value.data for o in outputs if o.topic == TOPICS.events]
    assert all(event.job_id == STATUS_ID for event in found)
    return found


def send(timers: ProcessorDriver[TimerState], event: Event) -> list[Output]:
    return timers.pipe(TOPICS.intake, event, key=SCHEDULE.encode())


def test_the_schedule_has_a_status_of_its_own(tmp_path: Path) -> None:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path, now_ms=T0)
    try:
        [first] = status(
            driver.pipe(
                TOPICS.intake,
                workflow_event(
                    OWNER, [step("a")], now_ms=T0, workflow_id=SCHEDULE, schedule="* * * * *"
                ),
            )
        )
        assert (first.kind, first.job_type, first.owner) == ("SCHEDULED", SCHEDULE_JOB_TYPE, OWNER)
        assert (first.scheduled_at_ms, first.created_at_ms) == (FIRST, T0)
        assert first.labels == {"jobstream.workflow": SCHEDULE}
        outputs = driver.advance(FIRST - T0)
        [run] = runs(outputs)
        [moved] = status(outputs)
        assert (moved.kind, moved.scheduled_at_ms) == ("SCHEDULED", FIRST + MINUTE)
        assert run["workflow_id"] in moved.detail
    finally:
        driver.close()


def test_paused_no_run_starts_and_resumed_the_schedule_goes_on_from_now(
    timers: ProcessorDriver[TimerState],
) -> None:
    [paused] = status(send(timers, pause_workflow_event(OWNER, SCHEDULE, now_ms=T0,
                                                        requested_by="cli:ann")))  # fmt: skip
    assert (paused.kind, paused.requested_by) == ("PAUSED", "cli:ann")
    assert runs(timers.advance(10 * MINUTE)) == [], "paused: no time of it starts a run"
    assert send(timers, pause_workflow_event(OWNER, SCHEDULE, now_ms=T0)) == [], "paused already"

    [resumed] = status(send(timers, resume_workflow_event(OWNER, SCHEDULE, now_ms=T0)))
    following = FIRST + 10 * MINUTE
    assert (resumed.kind, resumed.scheduled_at_ms) == ("RESUMED", following), (
        "the times missed while paused are not caught up"
    )
    assert runs(timers.advance(following - timers.now_ms - 1)) == []
    [run] = runs(timers.advance(1))
    assert run["workflow_id"] == run_workflow_id(SCHEDULE, following)
    assert send(timers, resume_workflow_event(OWNER, SCHEDULE, now_ms=T0)) == [], "not paused"


def test_an_update_gives_the_next_runs_its_steps_and_schedule(
    timers: ProcessorDriver[TimerState],
) -> None:
    update = update_workflow_event(
        OWNER,
        SCHEDULE,
        steps=[step("c", job_type="report.render")],
        cron="*/5 * * * *",
        now_ms=T0,
        requested_by="api:tests",
    )
    [updated] = status(send(timers, update))
    five = (T0 // (5 * MINUTE) + 1) * 5 * MINUTE
    assert (updated.kind, updated.scheduled_at_ms) == ("SCHEDULED", five)
    assert (updated.requested_by, updated.detail) == ("api:tests", "steps and schedule updated")
    assert runs(timers.advance(five - T0 - 1)) == [], "the old schedule's times are gone"
    [run] = runs(timers.advance(1))
    assert [(s["name"], s["spec"]["job_type"]) for s in run["steps"]] == [("c", "report.render")]


def test_a_paused_workflow_updated_stays_paused(timers: ProcessorDriver[TimerState]) -> None:
    send(timers, pause_workflow_event(OWNER, SCHEDULE, now_ms=T0))
    [updated] = status(send(timers, update_workflow_event(OWNER, SCHEDULE, cron="0 * * * *",
                                                          now_ms=T0)))  # fmt: skip
    assert (updated.kind, updated.detail) == ("PAUSED", "schedule updated, still paused")
    assert runs(timers.advance(2 * 3_600_000)) == []


def test_a_trigger_starts_a_run_now_unless_paused_or_the_last_run_still_runs(
    timers: ProcessorDriver[TimerState],
) -> None:
    timers.advance(1_000)
    outputs = send(timers, trigger_workflow_event(OWNER, SCHEDULE, now_ms=timers.now_ms,
                                                  requested_by="cli:ann"))  # fmt: skip
    [run] = runs(outputs)
    assert run["workflow_id"] == run_workflow_id(SCHEDULE, timers.now_ms)
    [moved] = status(outputs)
    assert (moved.kind, moved.scheduled_at_ms, moved.requested_by) == ("SCHEDULED", FIRST,
                                                                       "cli:ann")  # fmt: skip
    assert send(timers, trigger_workflow_event(OWNER, SCHEDULE, now_ms=timers.now_ms)) == [], (
        "overlap SKIP: the run has not ended"
    )
    for job_id in step_ids(Event("WorkflowSubmitted", run)).values():
        timers.pipe(TOPICS.intake, Event("WorkflowSubmitted", run), key=run["workflow_id"].encode())
        for output in timers.pipe(
            TOPICS.intake, step_ended(job_id, run["workflow_id"], "SUCCEEDED", timers.now_ms)
        ):
            if output.topic == TOPICS.intake:  # the run's end, to the schedule's partition
                [ended] = status(send(timers, output.value))
                assert orjson.loads(ended.result) == {"run_id": run["workflow_id"],
                                                      "outcome": "SUCCEEDED"}  # fmt: skip
    send(timers, pause_workflow_event(OWNER, SCHEDULE, now_ms=T0))
    assert send(timers, trigger_workflow_event(OWNER, SCHEDULE, now_ms=timers.now_ms)) == [], (
        "paused: resume it first"
    )


def test_a_command_for_what_is_no_recurring_workflow_here_changes_nothing(
    timers: ProcessorDriver[TimerState],
) -> None:
    assert send(timers, pause_workflow_event("someone-else", SCHEDULE, now_ms=T0)) == []
    assert send(timers, trigger_workflow_event(OWNER, "unknown", now_ms=T0)) == []
    cancel = Event(
        "WorkflowCancelled",
        {"workflow_id": SCHEDULE, "owner": OWNER, "requested_at_ms": T0, "requested_by": "cli:ann"},
    )
    [cancelled] = status(send(timers, cancel))
    assert (cancelled.kind, cancelled.requested_by) == ("CANCELLED", "cli:ann")
    assert send(timers, resume_workflow_event(OWNER, SCHEDULE, now_ms=T0)) == [], "cancelled"
    assert send(timers, cancel) == [], "cancelled once"


def test_a_restored_store_keeps_the_pause_and_the_new_steps(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    send(timers, update_workflow_event(OWNER, SCHEDULE, steps=[step("z")], now_ms=T0))
    send(timers, pause_workflow_event(OWNER, SCHEDULE, now_ms=T0))
    replica = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        assert runs(replica.advance(5 * MINUTE)) == []
        send(replica, resume_workflow_event(OWNER, SCHEDULE, now_ms=T0))
        [run] = runs(replica.advance(MINUTE))
        assert [s["name"] for s in run["steps"]] == ["z"]
    finally:
        replica.close()


def test_the_schedule_ending_on_a_max_runs_trigger_is_cancelled(tmp_path: Path) -> None:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path, now_ms=T0)
    try:
        driver.pipe(TOPICS.intake, workflow_event(
            OWNER, [step("a")], now_ms=T0, workflow_id=SCHEDULE,
            schedule={"expression": "* * * * *", "max_runs": 1}))  # fmt: skip
        outputs = send(driver, trigger_workflow_event(OWNER, SCHEDULE, now_ms=T0))
        assert len(runs(outputs)) == 1
        assert [event.kind for event in status(outputs)] == ["CANCELLED"]
        assert runs(driver.advance(5 * MINUTE)) == []
    finally:
        driver.close()
