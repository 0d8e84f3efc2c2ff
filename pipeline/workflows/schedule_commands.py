"""Commands on a recurring workflow: pause, resume, trigger a run, update its schedule or steps.

They are the job commands' records (ScheduleChanged, JobTriggered) naming the workflow's
``owner``: a workflow id names a workflow within its owner's, and the timers keep its
schedule under both. Such a command is keyed by the workflow id (the schedule's partition)
and its ``job_id`` is the id of the workflow's own status in jobs.status
(:func:`~jobstream._pipeline.workflows.ids.schedule_job_id`), so its history reads like a
recurring job's.

An UPDATE carries a new schedule (``cron``), new ``steps`` (the template of the runs that
start after it), or both; the steps pass the very checks of a submission, their errors
naming ``steps.<i>.<field>``. :func:`check_workflow_command` applies them to a record read
from the topic, whoever wrote it; the builders apply them before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.commands import validate_command
from jobstream._pipeline.model.records import (
    CronSchedule,
    Event,
    JobTriggered,
    ScheduleAction,
    ScheduleChanged,
    WorkflowSubmitted,
)
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.workflows.commands import (
    Fields,
    expand_workflow,
    schedule_record,
    workflow_event,
)
from jobstream._pipeline.workflows.ids import schedule_job_id

C = TypeVar("C", JobTriggered, ScheduleChanged)


def workflow_refusal(command: str, workflow_id: str, *, paused: bool) -> str | None:
    """Why ``command`` (``trigger``, ``pause``, ``resume``, ``update``) leaves a recurring
    workflow that is not cancelled as it is; None to apply it.

    The one rule of both sides, as for a recurring job
    (:func:`jobstream._pipeline.model.commands.command_refusal`): the API answers 409 with it
    from the workflow's status, the timers change nothing with it from its schedule. A
    paused workflow starts no run, a triggered one neither: resume it first.
    """
    if command == "trigger" and paused:
        return f"recurring workflow {workflow_id} is paused: resume it first"
    return None


def pause_workflow_event(owner: str, workflow_id: str, *, now_ms: int,
                         requested_by: str | None = None,
                         reason: str | None = None) -> Event:  # fmt: skip
    """ScheduleChanged PAUSE: no run of the workflow starts until it is resumed (runs
    started go on)."""
    return _command(ScheduleChanged, owner, workflow_id, now_ms, action=ScheduleAction.PAUSE,
                    requested_by=requested_by, reason=reason)  # fmt: skip


def resume_workflow_event(owner: str, workflow_id: str, *, now_ms: int,
                          requested_by: str | None = None,
                          reason: str | None = None) -> Event:  # fmt: skip
    """ScheduleChanged RESUME: the schedule goes on from its next time after now."""
    return _command(ScheduleChanged, owner, workflow_id, now_ms, action=ScheduleAction.RESUME,
                    requested_by=requested_by, reason=reason)  # fmt: skip


def trigger_workflow_event(owner: str, workflow_id: str, *, now_ms: int,
                           requested_by: str | None = None,
                           reason: str | None = None) -> Event:  # fmt: skip
    """JobTriggered: start a run now; the schedule keeps its times (its overlap policy
    still applies: with SKIP, no run while the previous one runs)."""
    return _command(JobTriggered, owner, workflow_id, now_ms, requested_by=requested_by,
                    reason=reason)  # fmt: skip


def update_workflow_event(owner: str, workflow_id: str, *,
                          cron: CronSpec | CronSchedule | Fields | str | None = None,
                          steps: Iterable[Fields] | None = None, now_ms: int,
                          requested_by: str | None = None,
                          reason: str | None = None) -> Event:  # fmt: skip
    """ScheduleChanged UPDATE: a new schedule (``cron``, as a submission's ``schedule``:
    its runs do not overlap unless it says ``overlap: ALLOW``) and/or new ``steps`` (as a
    submission's); for the runs that start after it."""
    if cron is None and steps is None:
        raise ValidationError("cron", "an update needs a new schedule (cron) or new steps")
    records = None
    if steps is not None:
        # The submission's own builder: each step checked and named as a submission's.
        records = workflow_event(owner, steps, now_ms=now_ms, workflow_id=workflow_id).data.steps
    schedule = None
    if cron is not None:
        schedule = _renamed_schedule(cron)
    return _command(ScheduleChanged, owner, workflow_id, now_ms, action=ScheduleAction.UPDATE,
                    cron=schedule, steps=records, requested_by=requested_by,
                    reason=reason)  # fmt: skip


def _renamed_schedule(cron: CronSpec | CronSchedule | Fields | str) -> CronSchedule:
    """A submission names its schedule ``schedule.*``; the command's field is ``cron``."""
    try:
        return schedule_record(cron)
    except ValidationError as exc:
        raise ValidationError("cron" + exc.field.removeprefix("schedule"), exc.message) from None


def check_workflow_command(record: JobTriggered | ScheduleChanged, *, now_ms: int) -> None:
    """The workflow's rules on a command naming an owner (``validate_command`` applied
    first): its job id is the workflow's status id, its steps a valid workflow."""
    owner, workflow_id = record.owner, record.workflow_id
    assert owner is not None and workflow_id is not None  # validate_command's
    expected = schedule_job_id(owner, workflow_id)
    if record.job_id != expected:
        raise ValidationError("job_id", f"must be {expected}, the status id of {owner}'s "
                              f"recurring workflow {workflow_id} "
                              "(jobstream._pipeline.workflows.ids.schedule_job_id)")  # fmt: skip
    if isinstance(record, ScheduleChanged) and record.steps is not None:
        expand_workflow(template_of(record, record.steps), now_ms=now_ms)


def template_of(record: ScheduleChanged, steps: Any) -> WorkflowSubmitted:
    """The WorkflowSubmitted whose steps are ``steps``, as the command's workflow."""
    assert record.owner is not None and record.workflow_id is not None
    return WorkflowSubmitted(workflow_id=record.workflow_id, owner=record.owner,
                             submitted_at_ms=record.requested_at_ms, steps=steps)  # fmt: skip


def validate(event: Event, *, now_ms: int) -> None:
    """Every rule of a command record, a recurring workflow's too; ValidationError naming
    the field at fault."""
    validate_command(event, now_ms=now_ms)
    record = event.data
    if isinstance(record, JobTriggered | ScheduleChanged) and record.owner is not None:
        check_workflow_command(record, now_ms=now_ms)


def _command(kind: type[C], owner: str, workflow_id: str, now_ms: int, **fields: Any) -> Event:
    record = kind(job_id=schedule_job_id(owner, workflow_id), workflow_id=workflow_id,
                  owner=owner, requested_at_ms=now_ms, **fields)  # fmt: skip
    event = Event.of(record)
    validate(event, now_ms=now_ms)
    return event
