"""Commands on jobs.intake: built checked, and checked again when read from the topic."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._pipeline.clock import instant_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.commands import (
    cancel_event,
    command_refusal,
    pause_event,
    resume_event,
    update_refusal,
    update_schedule_event,
    validate_command,
)
from jobstream._pipeline.model.records import CronSchedule, JobCancelled, evolve, plain
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import AvroDeserializer, AvroSerializer, Event

NOW_MS = 1_795_000_000_000
JOB_ID = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
SERIALIZE, DESERIALIZE = AvroSerializer(validate=True), AvroDeserializer()


def refused_field(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        call(*args, **kwargs)
    return refused.value.field


def test_cancel_event() -> None:
    event = cancel_event(JOB_ID, "wf-1", "not needed", now_ms=NOW_MS)
    assert event == Event(
        "JobCancelled",
        JobCancelled(
            job_id=JOB_ID,
            workflow_id="wf-1",
            requested_at_ms=NOW_MS,
            reason="not needed",
            requested_by=None,
        ),
    )
    assert DESERIALIZE(SERIALIZE(event)) == event
    by = cancel_event(JOB_ID, now_ms=NOW_MS, requested_by="cli:ann@host")
    assert by.data.requested_by == "cli:ann@host"
    assert refused_field(cancel_event, JOB_ID, now_ms=NOW_MS, requested_by="x" * 5000) == (
        "requested_by"
    )


def test_pause_and_resume_events() -> None:
    for build, action in ((pause_event, "PAUSE"), (resume_event, "RESUME")):
        event = build(JOB_ID, now_ms=NOW_MS)
        assert event.name == "ScheduleChanged"
        assert (event.data.action, event.data.cron, event.data.params) == (
            action,
            None,
            None,
        )
        assert DESERIALIZE(SERIALIZE(event)) == event


def test_update_schedule_event() -> None:
    cron = CronSpec(expression="30 8 * * *", timezone="Asia/Tokyo")
    event = update_schedule_event(JOB_ID, cron, {"month": "2026-12"}, now_ms=NOW_MS)
    assert event.data.action == "UPDATE"
    assert plain(event.data.cron) == cron.to_avro()
    assert event.data.params == '{"month":"2026-12"}'
    assert DESERIALIZE(SERIALIZE(event)) == event
    as_text = update_schedule_event(JOB_ID, "30 8 * * *", None, now_ms=NOW_MS)
    assert plain(as_text.data.cron) == CronSpec(expression="30 8 * * *").to_avro()
    assert event.data.run_at_ms is None and as_text.data.run_at_ms is None


def test_move_event_takes_an_instant_in_any_form() -> None:
    later = NOW_MS + 3_600_000
    instant = instant_of(later)
    for run_at in (later, instant, instant.isoformat()):
        event = update_schedule_event(JOB_ID, run_at=run_at, now_ms=NOW_MS)
        assert (event.data.action, event.data.run_at_ms) == ("UPDATE", later)
        assert (event.data.cron, event.data.params) == (None, None)
        assert DESERIALIZE(SERIALIZE(event)) == event
    with_params = update_schedule_event(JOB_ID, None, {"v": 2}, run_at=later, now_ms=NOW_MS)
    assert (with_params.data.run_at_ms, with_params.data.params) == (later, '{"v":2}')
    # a moment in the past (a client's clock behind): accepted, the job fires at once
    assert update_schedule_event(JOB_ID, run_at=NOW_MS - 60_000, now_ms=NOW_MS)


@pytest.mark.parametrize(
    ("call", "args", "kwargs", "field"),
    [
        (cancel_event, ("nope",), {}, "job_id"),
        (cancel_event, (JOB_ID, ""), {}, "workflow_id"),
        (cancel_event, (JOB_ID, None, "r" * 1001), {}, "reason"),
        (pause_event, (JOB_ID.lower(),), {}, "job_id"),
        (resume_event, (JOB_ID, "w" * 201), {}, "workflow_id"),
        (update_schedule_event, (JOB_ID,), {}, "cron"),
        (
            update_schedule_event,
            (JOB_ID, {"expression": "0 9 * * *", "timezone": "Mars/Base"}),
            {},
            "cron.timezone",
        ),
        (update_schedule_event, (JOB_ID, "0 9 * *"), {}, "cron.expression"),
        (update_schedule_event, (JOB_ID, 42), {}, "cron"),
        (update_schedule_event, (JOB_ID, None, "[1]"), {}, "params"),
        (update_schedule_event, (JOB_ID, None, {"x": "a" * 1_000_000}), {}, "params"),
        (update_schedule_event, (JOB_ID,), {"run_at": NOW_MS - 60_001}, "run_at_ms"),
        (update_schedule_event, (JOB_ID,), {"run_at": NOW_MS + 11 * 366 * 86_400_000}, "run_at_ms"),
        (update_schedule_event, (JOB_ID,), {"run_at": "2026-12-01T09:00"}, "run_at_ms"),
        (update_schedule_event, (JOB_ID,), {"run_at": True}, "run_at_ms"),
        (update_schedule_event, (JOB_ID, "0 9 * * *"), {"run_at": NOW_MS}, "run_at_ms"),
    ],
)
def test_builders_refuse_naming_the_field(
    call: Any, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    assert refused_field(call, *args, now_ms=NOW_MS, **kwargs) == field


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"action": "STOP"}, "action"),
        ({"action": "PAUSE", "cron": CronSchedule(expression="0 9 * * *")}, "cron"),
        ({"action": "RESUME", "cron": None}, "params"),
        ({"cron": CronSchedule(expression="0 9 * * *", timezone="Mars/Base")}, "cron.timezone"),
        ({"cron": None, "params": None}, "cron"),
        ({"params": "not json"}, "params"),
        ({"requested_at_ms": NOW_MS // 1000}, "requested_at_ms"),
        ({"requested_at_ms": NOW_MS + 3_600_000}, "requested_at_ms"),
        ({"action": "PAUSE", "cron": None, "params": None, "run_at_ms": NOW_MS}, "run_at_ms"),
        ({"run_at_ms": NOW_MS + 60_000}, "run_at_ms"),
        ({"cron": None, "run_at_ms": NOW_MS - 3_600_000}, "run_at_ms"),
        ({"cron": None, "run_at_ms": "soon"}, "run_at_ms"),
    ],
)
def test_validate_command_refuses_records_from_other_clients(
    changes: dict[str, Any], field: str
) -> None:
    event = update_schedule_event(JOB_ID, "0 9 * * *", {"a": 1}, now_ms=NOW_MS)
    bad = Event(event.name, evolve(event.data, **changes))
    assert refused_field(validate_command, bad, now_ms=NOW_MS) == field


def test_validate_command_refuses_an_event_that_is_not_a_command() -> None:
    bad = Event("JobSubmitted", {"job_id": JOB_ID, "requested_at_ms": NOW_MS})
    assert refused_field(validate_command, bad, now_ms=NOW_MS) == "name"


# --- the rules the API and the timers both apply


@pytest.mark.parametrize(("command", "facts", "refused"), [
    ("pause", {"recurring": False}, "is not recurring"),
    ("resume", {"recurring": False}, "is not recurring"),
    ("pause", {"recurring": True}, None),
    ("pause", {"recurring": None}, None),  # the views have not read the submission
    ("trigger", {"blocked": True}, "waits for its parents"),
    ("trigger", {"paused": True}, "resume it first"),
    ("trigger", {"recurring": False, "pending": False}, "has fired already"),
    ("trigger", {"recurring": True, "pending": False}, None),  # a schedule runs once more
    ("cancel", {"recurring": False, "pending": False, "blocked": True}, None),
])  # fmt: skip
def test_command_refusal(command: str, facts: dict[str, Any], refused: str | None) -> None:
    given = {"recurring": True, "pending": True, "blocked": False, "paused": False, **facts}
    reason = command_refusal(command, JOB_ID, **given)
    assert (reason is None) if refused is None else (refused in (reason or ""))


@pytest.mark.parametrize(("facts", "change", "refused"), [
    ({"recurring": True}, {"run_at": True}, "is recurring"),
    ({"recurring": True}, {"cron": True}, None),
    ({"recurring": False}, {"cron": True}, "is not recurring"),
    ({"recurring": False}, {"run_at": True}, None),
    ({"recurring": False, "blocked": True}, {}, "waits for its parents"),
    ({"recurring": False, "pending": False}, {"run_at": True}, "has fired already"),
    ({"recurring": None}, {"run_at": True}, None),
])  # fmt: skip
def test_update_refusal(facts: dict[str, Any], change: dict[str, bool], refused: str | None,
                        ) -> None:  # fmt: skip
    given = {"recurring": True, "pending": True, "blocked": False, **facts}
    reason = update_refusal(JOB_ID, **given, **{"cron": False, "run_at": False, **change})
    assert (reason is None) if refused is None else (refused in (reason or ""))
