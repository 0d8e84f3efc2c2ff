"""Commands on jobs.intake: cancel a job, trigger it, pause, resume or update a schedule.

A command is keyed like the submission it acts on
(:func:`jobstream._pipeline.partitioning.partition_key`),
so it must carry the job's workflow id when the job has one: otherwise it lands on another
partition, whose timer processor has never seen the job.

Every command names who asked (``requested_by``: the actor, e.g. ``api:acme``) and why
(``reason``), both optional and bounded; the timers carry them onto the JobLifecycle the
command causes, so a job's history tells who paused, moved or cancelled it.

The builders check their arguments with the submission's field rules and return the event
of its record; :func:`validate_command` applies the same checks to a command record read
from the topic (its decoding has already given every field its type).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import pydantic

from jobstream._pipeline.clock import ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.job import (
    EARLIEST_SUBMITTED_AT_MS,
    MAX_CLOCK_SKEW_MS,
    cron_of,
    cron_record,
    cron_spec,
)
from jobstream._pipeline.model.records import (
    Event,
    JobCancelled,
    JobTriggered,
    ScheduleAction,
    ScheduleChanged,
    WorkflowCancelled,
)
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.scheduling.cron import FIELD_PREFIX as CRON_FIELD_PREFIX
from jobstream._pipeline.scheduling.one_off import DEFAULT_MAX_FUTURE_MS, normalize_fire_time

Command = JobCancelled | JobTriggered | ScheduleChanged | WorkflowCancelled
"""The records a command is."""
C = TypeVar("C", JobCancelled, JobTriggered, ScheduleChanged)
_ACTIONS = tuple(ScheduleAction)

RUN_AT_GRACE_MS = 60_000
"""How far before the command's ``requested_at_ms`` a one-off job's new run time may be.
A client clock a little behind, or a request that took a moment, still moves the job (it
then fires at once); further back is a mistake (a unit or a zone), refused naming
``run_at_ms``. Measured from the record, so the timers reading it late agree."""

_INSTANT = pydantic.TypeAdapter(pydantic.AwareDatetime)


def cancel_event(
    job_id: str, workflow_id: str | None = None, reason: str | None = None, *, now_ms: int,
    requested_by: str | None = None,
) -> Event:  # fmt: skip
    """JobCancelled: drop the job's pending fire (and, for a schedule, every later one) and
    stop a run of it under way; ``requested_by`` names who asked, for the history."""
    return _command(JobCancelled, job_id, workflow_id, now_ms, reason=reason,
                    requested_by=requested_by)  # fmt: skip


def trigger_event(job_id: str, workflow_id: str | None = None, *, now_ms: int,
                  requested_by: str | None = None, reason: str | None = None) -> Event:  # fmt: skip
    """JobTriggered: run a scheduled job now (a recurring one keeps its schedule)."""
    return _command(JobTriggered, job_id, workflow_id, now_ms, reason=reason,
                    requested_by=requested_by)  # fmt: skip


def pause_event(job_id: str, workflow_id: str | None = None, *, now_ms: int,
                requested_by: str | None = None, reason: str | None = None) -> Event:  # fmt: skip
    """ScheduleChanged PAUSE: a recurring job stops firing until resumed."""
    return _command(ScheduleChanged, job_id, workflow_id, now_ms, action=ScheduleAction.PAUSE,
                    requested_by=requested_by, reason=reason)  # fmt: skip


def resume_event(job_id: str, workflow_id: str | None = None, *, now_ms: int,
                 requested_by: str | None = None, reason: str | None = None) -> Event:  # fmt: skip
    """ScheduleChanged RESUME: a paused job fires again from its next occurrence."""
    return _command(ScheduleChanged, job_id, workflow_id, now_ms, action=ScheduleAction.RESUME,
                    requested_by=requested_by, reason=reason)  # fmt: skip


def update_schedule_event(
    job_id: str,
    cron: CronSpec | Mapping[str, Any] | str | None = None,
    params: Mapping[str, Any] | str | None = None,
    workflow_id: str | None = None,
    *,
    run_at: datetime | str | int | None = None,
    now_ms: int,
    requested_by: str | None = None,
    reason: str | None = None,
) -> Event:
    """ScheduleChanged UPDATE: a recurring job's new schedule, a pending one-off job's new
    run time, new parameters, or a schedule or run time with parameters (at least one).

    ``cron`` is a CronSpec, a bare expression (UTC) or a mapping of CronSchedule fields;
    ``params`` a mapping or JSON object text; ``run_at`` a timezone-aware datetime, ISO 8601
    text with a zone, or epoch ms, at most :data:`RUN_AT_GRACE_MS` before ``now_ms``.
    """
    schedule = None
    if cron is not None:
        with _command_cron_path():
            spec = cron_spec(cron)
        if not isinstance(spec, CronSpec):
            raise ValidationError(
                "cron", f"must be a CronSpec, an expression or a mapping: {cron!r}"
            )
        schedule = cron_record(spec)
    text = None
    if params is not None:
        checked = rules.field_check("params", rules.params, params)
        text = rules.field_check("params", rules.encode_params, checked)
    run_at_ms = None if run_at is None else instant_ms(run_at)
    return _command(ScheduleChanged, job_id, workflow_id, now_ms, action=ScheduleAction.UPDATE,
                    cron=schedule, params=text, run_at_ms=run_at_ms, requested_by=requested_by,
                    reason=reason)  # fmt: skip


def command_refusal(command: str, job_id: str, *, recurring: bool | None, pending: bool,
                    blocked: bool, paused: bool) -> str | None:  # fmt: skip
    """Why ``command`` (``trigger``, ``pause``, ``resume``; a cancel applies in every state)
    leaves a job that has not ended as it is; None to apply it.

    The one rule of both sides, as :func:`update_refusal`: the API answers 409 with it from
    its views, the timers change nothing with it from their entry. Only a schedule is
    paused or resumed; a trigger runs a job that is not waiting for its parents, not
    paused, and (one-off) not fired yet (``pending``).
    """
    if command in ("pause", "resume") and recurring is False:
        return f"job {job_id} is not recurring: only a schedule is paused or resumed"
    if command == "trigger":
        if blocked:
            return f"job {job_id} waits for its parents"
        if paused:
            return f"job {job_id} is paused: resume it first"
        if recurring is False and not pending:
            return f"job {job_id} has fired already"
    return None


def update_refusal(job_id: str, *, recurring: bool | None, pending: bool, blocked: bool,
                   cron: bool, run_at: bool) -> str | None:  # fmt: skip
    """Why an UPDATE (a new ``cron``, a new ``run_at`` or neither: parameters only) leaves
    a job that has not ended as it is; None to apply it.

    The one rule of both sides: the API answers 409 with it from its views, the timers
    ignore the command with it from their entry. A recurring job takes a cron, a one-off
    job a run time, and a one-off job changes only while ``pending`` (not fired) and not
    ``blocked`` (waiting for its parents). ``recurring`` None: not known yet (the views have
    not read the submission), the timers decide.
    """
    if recurring is True and run_at:
        return f"job {job_id} is recurring: give it a new cron, not run_at_ms"
    if recurring is False:
        if cron:
            return f"job {job_id} is not recurring: give it a new run_at_ms, not cron"
        if blocked:
            return f"job {job_id} waits for its parents: it can be changed once it is SCHEDULED"
        if not pending:
            return f"job {job_id} has fired already"
    return None


def instant_ms(value: datetime | str | int) -> int:
    """Epoch ms of a run time given as an aware datetime, ISO 8601 text with a zone, or
    epoch ms; ValidationError naming ``run_at_ms`` otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, datetime | str):
        try:
            instant = _INSTANT.validate_python(value)
        except pydantic.ValidationError:
            pass
        else:
            return ms_of(instant)
    raise ValidationError(
        "run_at_ms", f"must be an instant with a zone (ISO 8601) or epoch ms: {value!r}"
    )


@contextmanager
def _command_cron_path() -> Iterator[None]:
    """CronSpec names the submission's path, ``spec.cron.*``; a command's is ``cron.*``."""
    try:
        yield
    except ValidationError as exc:
        field = "cron." + exc.field.removeprefix(CRON_FIELD_PREFIX)
        raise ValidationError(field, exc.message) from None


def _command(kind: type[C], job_id: str, workflow_id: str | None, now_ms: int,
             **fields: Any) -> Event:  # fmt: skip
    """A command on a job, requested at ``now_ms``, checked before it is sent."""
    record = kind(job_id=job_id, workflow_id=workflow_id, requested_at_ms=now_ms, **fields)
    event = Event.of(record)
    validate_command(event, now_ms=now_ms)
    return event


def cancel_workflow_event(owner: str, workflow_id: str, reason: str | None = None, *,
                          now_ms: int, requested_by: str | None = None) -> Event:  # fmt: skip
    """WorkflowCancelled: cancel every job of ``owner``'s workflow that has not ended yet,
    running ones too."""
    event = Event.of(WorkflowCancelled(workflow_id=workflow_id, owner=owner,
                                       requested_at_ms=now_ms, reason=reason,
                                       requested_by=requested_by))  # fmt: skip
    validate_command(event, now_ms=now_ms)
    return event


def validate_command(event: Event, *, now_ms: int) -> None:
    """Check a JobCancelled, JobTriggered, ScheduleChanged or WorkflowCancelled record
    (the event's data); ValidationError naming the field at fault.

    Paths are those of the command's own record (``cron.timezone``, not ``spec.cron...``).
    """
    record = event.data
    if isinstance(record, WorkflowCancelled):
        rules.field_check("workflow_id", rules.workflow_id, record.workflow_id)
        rules.field_check("owner", rules.owner, record.owner)
        _check_requested_at(record.requested_at_ms, now_ms)
        _check_actor(record)
        return
    if not isinstance(record, JobCancelled | JobTriggered | ScheduleChanged):
        raise ValidationError("name", f"{event.name} is not a command")
    rules.field_check("job_id", rules.job_id, record.job_id)
    if record.workflow_id is not None:
        rules.field_check("workflow_id", rules.workflow_id, record.workflow_id)
    _check_requested_at(record.requested_at_ms, now_ms)
    _check_actor(record)
    if not isinstance(record, JobCancelled) and record.owner is not None:
        _check_recurring_workflow(record)
    if isinstance(record, ScheduleChanged):
        _check_schedule_change(record)


def _check_recurring_workflow(record: JobTriggered | ScheduleChanged) -> None:
    """A command on a recurring workflow (it names an owner): the workflow's id and owner;
    what only a job has is refused. Its job id and steps are checked with the workflow's
    rules (:func:`jobstream._pipeline.workflows.schedule_commands.check_workflow_command`)."""
    rules.field_check("owner", rules.owner, record.owner)
    if record.workflow_id is None:
        raise ValidationError("workflow_id", "a recurring workflow's command names the workflow")
    if isinstance(record, ScheduleChanged):
        for name, value in (("params", record.params), ("run_at_ms", record.run_at_ms)):
            if value is not None:
                raise ValidationError(name, f"a recurring workflow has no {name}: its steps do")


def _check_actor(record: Command) -> None:
    """A command's free texts: why, and who asked (both for the history, both bounded)."""
    for name, value in (("reason", record.reason), ("requested_by", record.requested_by)):
        if value is not None:
            rules.field_check(name, rules.reason, value)


def _check_requested_at(value: int, now_ms: int) -> None:
    if not EARLIEST_SUBMITTED_AT_MS <= value <= now_ms + MAX_CLOCK_SKEW_MS:
        raise ValidationError("requested_at_ms", f"is not a plausible instant in ms: {value}")


def _check_schedule_change(record: ScheduleChanged) -> None:
    action, cron, params, run_at = record.action, record.cron, record.params, record.run_at_ms
    steps = record.steps
    if action not in _ACTIONS:
        raise ValidationError("action", f"must be one of {', '.join(_ACTIONS)}; got {action!r}")
    if action != ScheduleAction.UPDATE:
        for name, value in (("cron", cron), ("params", params), ("run_at_ms", run_at),
                            ("steps", steps)):  # fmt: skip
            if value is not None:
                raise ValidationError(name, f"only UPDATE carries {name}, not {action}")
        return
    if steps is not None and record.owner is None:
        raise ValidationError("steps", "only a recurring workflow's UPDATE (with its owner) "
                                       "carries steps")  # fmt: skip
    if cron is None and params is None and run_at is None and steps is None:
        raise ValidationError(
            "cron",
            "UPDATE needs a new schedule (cron) or run time (run_at_ms), or new params"
            " (a recurring workflow: new steps)",
        )
    if run_at is not None:
        if cron is not None:
            raise ValidationError(
                "run_at_ms", "cannot be set together with cron: a job is one-off or recurring"
            )
        _check_run_at(run_at, record.requested_at_ms)
    if params is not None:
        rules.field_check("params", rules.params, params)
    if cron is not None:
        with _command_cron_path():
            cron_of(cron)


def _check_run_at(run_at_ms: int, requested_at_ms: int) -> None:
    """A new run time: from :data:`RUN_AT_GRACE_MS` before the request to the furthest a
    submission may name (about 10 years after it)."""
    try:
        normalize_fire_time(
            run_at_ms,
            now_ms=requested_at_ms,
            max_past_ms=RUN_AT_GRACE_MS,
            max_future_ms=DEFAULT_MAX_FUTURE_MS,
        )
    except ValidationError as exc:
        raise ValidationError("run_at_ms", exc.message) from None
