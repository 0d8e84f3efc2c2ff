"""Commands on jobs.intake: cancel a job, trigger it, pause, resume or update a schedule.

A command is keyed like the submission it acts on (:func:`pipeline.partitioning.partition_key`),
so it must carry the job's workflow id when the job has one: otherwise it lands on another
partition, whose timer processor has never seen the job.

The builders check their arguments with the submission's field rules and return the event;
:func:`validate_command` applies the same checks to a decoded command from the topic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipeline.errors import ValidationError
from pipeline.jobs import rules
from pipeline.jobs.model import EARLIEST_SUBMITTED_AT_MS, MAX_CLOCK_SKEW_MS, cron_spec
from pipeline.scheduling import CronSpec
from pipeline.scheduling.cron import FIELD_PREFIX as CRON_FIELD_PREFIX
from pipeline.serde import Event

ACTIONS = ("PAUSE", "RESUME", "UPDATE")
"""The symbols of io.jobstream.ScheduleAction."""


def cancel_event(
    job_id: str, workflow_id: str | None = None, reason: str | None = None, *, now_ms: int
) -> Event:
    """JobCancelled: drop the job's pending fire (and, for a schedule, every later one)."""
    return _command("JobCancelled", job_id, workflow_id, now_ms, reason=reason)


def trigger_event(job_id: str, workflow_id: str | None = None, *, now_ms: int) -> Event:
    """JobTriggered: run a scheduled job now (a recurring one keeps its schedule)."""
    return _command("JobTriggered", job_id, workflow_id, now_ms)


def pause_event(job_id: str, workflow_id: str | None = None, *, now_ms: int) -> Event:
    """ScheduleChanged PAUSE: a recurring job stops firing until resumed."""
    return _schedule_changed(job_id, workflow_id, "PAUSE", None, None, now_ms)


def resume_event(job_id: str, workflow_id: str | None = None, *, now_ms: int) -> Event:
    """ScheduleChanged RESUME: a paused job fires again from its next occurrence."""
    return _schedule_changed(job_id, workflow_id, "RESUME", None, None, now_ms)


def update_schedule_event(
    job_id: str,
    cron: CronSpec | Mapping[str, Any] | str | None = None,
    params: Mapping[str, Any] | str | None = None,
    workflow_id: str | None = None,
    *,
    now_ms: int,
) -> Event:
    """ScheduleChanged UPDATE: a new schedule, new parameters, or both (at least one).

    ``cron`` is a CronSpec, a bare expression (UTC) or a mapping of CronSchedule fields;
    ``params`` a mapping or JSON object text.
    """
    schedule = None
    if cron is not None:
        with _command_cron_path():
            spec = cron_spec(cron)
        if not isinstance(spec, CronSpec):
            raise ValidationError(
                "cron", f"must be a CronSpec, an expression or a mapping: {cron!r}"
            )
        schedule = spec.to_avro()
    text = None
    if params is not None:
        checked = rules.field_check("params", rules.params, params)
        text = rules.field_check("params", rules.encode_params, checked)
    return _schedule_changed(job_id, workflow_id, "UPDATE", schedule, text, now_ms)


@contextmanager
def _command_cron_path() -> Iterator[None]:
    """CronSpec names the submission's path, ``spec.cron.*``; a command's is ``cron.*``."""
    try:
        yield
    except ValidationError as exc:
        field = "cron." + exc.field.removeprefix(CRON_FIELD_PREFIX)
        raise ValidationError(field, exc.message) from None


def _schedule_changed(
    job_id: str,
    workflow_id: str | None,
    action: str,
    cron: dict[str, Any] | None,
    params: str | None,
    now_ms: int,
) -> Event:
    return _command("ScheduleChanged", job_id, workflow_id, now_ms, action=action, cron=cron,
                    params=params)  # fmt: skip


def _command(name: str, job_id: str, workflow_id: str | None, now_ms: int,
             **fields: Any) -> Event:  # fmt: skip
    """A command on a job, requested at ``now_ms``, checked before it is sent."""
    record = {"job_id": job_id, "workflow_id": workflow_id, "requested_at_ms": now_ms, **fields}
    event = Event(name, record)
    validate_command(event, now_ms=now_ms)
    return event


def cancel_workflow_event(workflow_id: str, reason: str | None = None, *, now_ms: int) -> Event:
    """WorkflowCancelled: cancel every job of the workflow that has not ended yet."""
    record = {"workflow_id": workflow_id, "requested_at_ms": now_ms, "reason": reason}
    event = Event("WorkflowCancelled", record)
    validate_command(event, now_ms=now_ms)
    return event


def validate_command(event: Event, *, now_ms: int) -> None:
    """Check a JobCancelled, JobTriggered, ScheduleChanged or WorkflowCancelled;
    ValidationError naming the field at fault.

    Paths are those of the command's own record (``cron.timezone``, not ``spec.cron...``).
    """
    record = event.data
    if event.name == "WorkflowCancelled":
        rules.field_check("workflow_id", rules.workflow_id, record.get("workflow_id"))
        _check_requested_at(record.get("requested_at_ms"), now_ms)
        if record.get("reason") is not None:
            rules.field_check("reason", rules.reason, record["reason"])
        return
    rules.field_check("job_id", rules.job_id, record.get("job_id"))
    if record.get("workflow_id") is not None:
        rules.field_check("workflow_id", rules.workflow_id, record["workflow_id"])
    _check_requested_at(record.get("requested_at_ms"), now_ms)
    if event.name == "JobCancelled":
        if record.get("reason") is not None:
            rules.field_check("reason", rules.reason, record["reason"])
    elif event.name == "JobTriggered":
        return
    elif event.name == "ScheduleChanged":
        _check_schedule_change(record)
    else:
        raise ValidationError("name", f"{event.name} is not a command")


def _check_requested_at(value: object, now_ms: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("requested_at_ms", "must be epoch milliseconds (an integer)")
    if not EARLIEST_SUBMITTED_AT_MS <= value <= now_ms + MAX_CLOCK_SKEW_MS:
        raise ValidationError("requested_at_ms", f"is not a plausible instant in ms: {value}")


def _check_schedule_change(record: Mapping[str, Any]) -> None:
    action, cron, params = record.get("action"), record.get("cron"), record.get("params")
    if action not in ACTIONS:
        raise ValidationError("action", f"must be one of {', '.join(ACTIONS)}; got {action!r}")
    if action != "UPDATE":
        for name, value in (("cron", cron), ("params", params)):
            if value is not None:
                raise ValidationError(name, f"only UPDATE carries {name}, not {action}")
        return
    if cron is None and params is None:
        raise ValidationError("cron", "UPDATE needs a new schedule, new params, or both")
    if params is not None:
        rules.field_check("params", rules.params, params)
    if cron is not None:
        if not isinstance(cron, Mapping):
            raise ValidationError("cron", "must be a CronSchedule record or null")
        with _command_cron_path():
            CronSpec.from_avro(cron)
