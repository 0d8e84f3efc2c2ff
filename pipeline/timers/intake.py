"""Where a record enters the timers: decoded, then checked once into the command they apply.

Every rule on a record read from jobs.intake or jobs.retry is applied here, at the serde
edge, whoever produced the record: the submission's
(:func:`jobstream._pipeline.model.job.validate_submitted`),
a command's (:func:`jobstream._pipeline.model.commands.validate_command`; a recurring
workflow's, :mod:`jobstream._pipeline.workflows.schedule_commands`), a workflow's
(:func:`jobstream._pipeline.workflows.commands.expand_workflow`), a StepEnded's, a
SingletonEnded's and a signal's
(:func:`jobstream._pipeline.model.held.check_signal`). A record that
breaks
one raises :class:`~jobstream._pipeline.errors.ValidationError` naming the field, and the processor
dead-letters it. The timers' logic (pipeline/timers/logic.py) receives the checked
:data:`Command` and trusts it: it decides only what the record means for the state it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.held import check_signal
from jobstream._pipeline.model.job import validate_submitted
from jobstream._pipeline.model.keys import key_text
from jobstream._pipeline.model.records import (
    JobCancelled,
    JobSubmitted,
    JobTriggered,
    RetryScheduled,
    ScheduleChanged,
    SingletonEnded,
    StepEnded,
    WorkflowCancelled,
    WorkflowSignalled,
    WorkflowSubmitted,
)
from jobstream._pipeline.scheduling import CronSpec
from jobstream._pipeline.serde import Event
from jobstream._pipeline.workflows import StepOutcome
from jobstream._pipeline.workflows.commands import check_schedule, expand_workflow
from jobstream._pipeline.workflows.schedule_commands import validate

_ENDED = frozenset(StepOutcome) - {StepOutcome.UNKNOWN}


@dataclass(frozen=True, slots=True)
class Workflow:
    """A WorkflowSubmitted, checked: its steps' jobs, parents first, or its schedule."""

    record: WorkflowSubmitted
    steps: list[tuple[str, JobSubmitted]]
    """(step name, the step's JobSubmitted), parents first."""
    schedule: CronSpec | None
    """A recurring workflow's schedule; None for one that runs once."""


@dataclass(frozen=True, slots=True)
class Ended:
    """A StepEnded, checked: the workflow's owner it names is known to be there."""

    record: StepEnded
    owner: str


Command = (JobSubmitted | JobCancelled | JobTriggered | ScheduleChanged | WorkflowCancelled
           | RetryScheduled | Workflow | Ended | WorkflowSignalled | SingletonEnded)  # fmt: skip
"""What the timers' logic applies: a record that passed its rules."""


def checked(event: Event, now_ms: int) -> Command:
    """The command ``event`` carries, every rule of its record applied; ValidationError
    naming the field at fault for a record to dead-letter. ``now_ms`` is the reader's
    clock (it bounds the instants a client may claim, see pipeline/model/job.py)."""
    check = _CHECKS.get(event.name)
    if check is None:
        raise ValidationError("event", f"{event.name} does not belong on the timer topics")
    return check(event, now_ms)


def _submitted(event: Event, now_ms: int) -> Command:
    validate_submitted(event.data, now_ms=now_ms)
    return event.data


def _command(event: Event, now_ms: int) -> Command:
    validate(event, now_ms=now_ms)
    return event.data


def _workflow(event: Event, now_ms: int) -> Command:
    record: WorkflowSubmitted = event.data
    return Workflow(record, expand_workflow(record, now_ms=now_ms), check_schedule(record))


def _step_ended(event: Event, now_ms: int) -> Command:
    """A StepEnded comes from the status processor; its rules still hold it to the
    partition's store keys (owner, workflow id, job id) and to an end that releases."""
    data: StepEnded = event.data
    rules.field_check("job_id", rules.job_id, data.job_id)
    rules.field_check("workflow_id", rules.workflow_id, data.workflow_id)
    owner: str = rules.field_check("owner", rules.owner, data.owner)
    if data.outcome not in _ENDED:
        raise ValidationError("outcome", f"must be one of {', '.join(sorted(_ENDED))}; "
                                         f"got {str(data.outcome)!r}")  # fmt: skip
    return Ended(data, owner)


def _signal(event: Event, now_ms: int) -> Command:
    check_signal(event.data)
    return event.data


def _singleton_ended(event: Event, now_ms: int) -> Command:
    """A SingletonEnded comes from the status processor; its rules hold it to the store key
    of its singleton key (owner, key) and to a job id."""
    data: SingletonEnded = event.data
    rules.field_check("job_id", rules.job_id, data.job_id)
    rules.field_check("owner", rules.owner, data.owner)
    rules.field_check("singleton_key", key_text, data.singleton_key)
    return data


def _retry(event: Event, now_ms: int) -> Command:
    """A RetryScheduled is the retry router's, from a JobSubmitted checked at intake."""
    return event.data


_CHECKS: dict[str, Callable[[Event, int], Command]] = {
    "JobSubmitted": _submitted,
    "JobCancelled": _command,
    "JobTriggered": _command,
    "ScheduleChanged": _command,
    "WorkflowCancelled": _command,
    "WorkflowSubmitted": _workflow,
    "StepEnded": _step_ended,
    "RetryScheduled": _retry,
    "WorkflowSignalled": _signal,
    "SingletonEnded": _singleton_ended,
}
