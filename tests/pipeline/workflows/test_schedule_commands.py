"""The rules of a recurring workflow's commands: each bad field named, as a submission's."""

from __future__ import annotations

import msgspec
import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import ScheduleAction, ScheduleChanged, evolve
from jobstream._pipeline.serde import Event
from jobstream._pipeline.workflows.ids import schedule_job_id, step_job_id
from jobstream._pipeline.workflows.schedule_commands import (
    pause_workflow_event,
    trigger_workflow_event,
    update_workflow_event,
    validate,
    workflow_refusal,
)
from tests.support.workflows import step

T0 = 1_798_000_000_000


def field_of(excinfo: pytest.ExceptionInfo[ValidationError]) -> str:
    return excinfo.value.field


def test_a_command_is_keyed_by_the_workflow_and_names_its_status() -> None:
    event = pause_workflow_event("acme", "nightly", now_ms=T0, requested_by="cli:ann")
    record = event.data
    assert (record.workflow_id, record.owner, record.requested_by) == ("nightly", "acme",
                                                                       "cli:ann")  # fmt: skip
    assert record.job_id == schedule_job_id("acme", "nightly")
    assert schedule_job_id("acme", "nightly") != schedule_job_id("globex", "nightly")
    assert schedule_job_id("acme", "nightly") != step_job_id("acme", "nightly", "a")


@pytest.mark.parametrize(("fields", "field"), [
    ({}, "cron"),
    ({"cron": "61 * * * *"}, "cron.expression"),
    ({"cron": {"expression": "0 3 * * *", "timezone": "Mars/Olympus"}}, "cron.timezone"),
    ({"steps": [step("a"), step("b", "nope")]}, "steps.1.depends_on.0"),
    ({"steps": [step("a", job_type="Not A Type")]}, "steps.0.spec.job_type"),
    ({"steps": [step("a"), step("b", "c"), step("c", "b")]}, "steps"),
    ({"steps": [step("a", job_type="jobstream.workflow")]}, "steps.0.spec.job_type"),
])  # fmt: skip
def test_an_update_is_checked_as_a_submission_naming_the_field(fields: dict[str, object],
                                                                field: str) -> None:  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        update_workflow_event("acme", "nightly", now_ms=T0, **fields)  # type: ignore[arg-type]
    assert field_of(refused) == field


def test_an_update_defaults_to_runs_that_do_not_overlap() -> None:
    event = update_workflow_event("acme", "nightly", cron="*/5 * * * *", now_ms=T0)
    assert event.data.cron.overlap == "SKIP"
    assert event.data.steps is None


def test_a_record_from_any_producer_gets_the_same_checks() -> None:
    good: ScheduleChanged = update_workflow_event("acme", "nightly", steps=[step("a")],
                                                  now_ms=T0).data  # fmt: skip
    cases = {
        "job_id": evolve(good, job_id=schedule_job_id("globex", "nightly")),
        "params": evolve(good, params="{}"),
        "run_at_ms": evolve(good, run_at_ms=T0),
        "workflow_id": evolve(good, workflow_id=None),
        "steps": evolve(good, owner=None, job_id=step_job_id("acme", "nightly", "a")),
        "steps.0.spec.owner": evolve(good, steps=[evolve(good.steps[0], spec=evolve(
            good.steps[0].spec, owner="globex"))]),
    }  # fmt: skip
    for field, record in cases.items():
        with pytest.raises(ValidationError) as refused:
            validate(Event.of(record), now_ms=T0)
        assert field_of(refused) == field, record
    paused = msgspec.structs.replace(good, action=ScheduleAction.PAUSE)
    with pytest.raises(ValidationError) as refused:
        validate(Event.of(paused), now_ms=T0)
    assert field_of(refused) == "steps", "only UPDATE carries steps"
    validate(trigger_workflow_event("acme", "nightly", now_ms=T0), now_ms=T0)


def test_the_reserved_job_type_is_refused_to_jobs() -> None:
    with pytest.raises(ValidationError) as refused:
        JobRequest(job_type="jobstream.workflow", owner="acme")
    assert field_of(refused) == "spec.job_type"


def test_a_paused_workflow_is_not_triggered() -> None:
    assert workflow_refusal("trigger", "nightly", paused=True) == (
        "recurring workflow nightly is paused: resume it first"
    )
    assert workflow_refusal("trigger", "nightly", paused=False) is None
    assert workflow_refusal("pause", "nightly", paused=True) is None
