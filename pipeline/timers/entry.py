"""A timer entry: what the timer store holds for one pending firing.

Entries are the values of the changelog (JSON, so an operator can read the changelog
with a console consumer) and of the store's index by timer id. Each kind of entry is a
type of its own, told apart in the JSON by its ``kind``; what it holds under ``job``
depends on the kind:

- :class:`JobEntry` (``job``) and :class:`RetryEntry` (``retry``): the JobSubmitted record;
- :class:`MarkerEntry` (``marker``): a :class:`Marker`, the ids a repeat is recognised by;
- :class:`ScheduleEntry` (``workflow``): a :class:`RecurringWorkflow`, whose template
  every run is submitted from;
- :class:`DebounceEntry` (``debounce``) and :class:`SingletonEntry` (``singleton``): a
  debounce key's open window and a singleton key's current job (pipeline/timers/collapse.py).

The field names are those entries had when ``job`` was a plain JSON object, so a store
restored from a changelog written then still loads (tests/pipeline/timers/test_entry.py).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

import msgspec

from jobstream._pipeline.model.records import (
    Checkpoint,
    CronSchedule,
    ErrorInfo,
    JobSpec,
    JobSubmitted,
    WorkflowSubmitted,
)

Kind = Literal["job", "retry", "marker", "workflow", "debounce", "singleton"]

RETRY_SUFFIX = "/retry"


def retry_timer_id(job_id: str) -> str:
    """A retry waits beside the job's own schedule (a cron job keeps its next run)."""
    return job_id + RETRY_SUFFIX


SCHEDULE_PREFIX = "S:"
ENDED_PREFIX = "E:"


def _scoped(owner: str, workflow_id: str) -> str:
    """A workflow's owner and id in one timer id (an owner holds no control character)."""
    return f"{owner}\x00{workflow_id}"


def schedule_timer_id(owner: str, workflow_id: str) -> str:
    """The timer of a recurring workflow. Prefixed: an owner may start with a lower-case
    letter, which in the changelog would read as a step node's or a workflow record's key."""
    return SCHEDULE_PREFIX + _scoped(owner, workflow_id)


def ended_timer_id(owner: str, workflow_id: str) -> str:
    """The marker that forgets an ended workflow's record once it expires."""
    return ENDED_PREFIX + _scoped(owner, workflow_id)


class Marker(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a marker keeps of the job (or the workflow) it stands for."""

    job_id: str
    """The job's id; an ended workflow's id for its marker."""
    idempotency_key: str | None
    owner: str | None = None
    """An ended workflow's owner (its record is kept under owner and id)."""


class ScheduleSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A recurring workflow's schedule and owner, where a job's entry has its spec."""

    cron: CronSchedule
    owner: str
    job_type: str = ""


class RecurringWorkflow(msgspec.Struct, frozen=True, kw_only=True):
    """A recurring workflow as its timer keeps it: the WorkflowSubmitted of its steps."""

    job_id: str
    """The workflow's id (the schedule's)."""
    workflow_id: None = None
    template: WorkflowSubmitted
    idempotency_key: str | None = None
    spec: ScheduleSpec


class TimerEntry(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """The fields every kind of entry has; an entry is one of the kinds below."""

    kind: ClassVar[Kind]
    """job: a submission's schedule; retry: one more attempt; marker: an idempotency
    record kept after a one-off job fired, so a resubmission stays a no-op; workflow: a
    recurring workflow's schedule (see schedule_timer_id)."""
    timer_id: str
    """The job id; the job id + '/retry' for a pending retry."""
    due_ms: int
    """The instant to fire (cron jitter applied); for a marker, when it expires."""
    runs: int = 0
    """Runs fired so far (recurring jobs)."""
    attempt: int = 1
    paused: bool = False
    blocked: bool = False
    """Waiting for parents (its step node says which): out of the schedule until released."""
    errors: list[ErrorInfo] = []
    """A retry's earlier attempts' errors."""
    held_by: str | None = None
    """The id of the rate limit holding the job back (pipeline/limits/model.py), while it
    waits in that limit's queue instead of the schedule."""
    held_at_ms: int | None = None
    """When a rate limit first held it back: its firing reports the time since as
    throttled, apart from the timers' own lateness."""
    waiting_since_ms: int | None = None
    """A wait or a sleep (pipeline/model/held.py) that has begun: since when it is WAITING;
    its ``due_ms`` is then when it wakes, or times out."""

    @property
    def job_id(self) -> str:
        raise NotImplementedError

    @property
    def owner(self) -> str:
        """The owner its schedule is fair to; "" for a marker, which fires nothing."""
        raise NotImplementedError

    def evolve(self, **changes: Any) -> Self:
        return msgspec.structs.replace(self, **changes)

    def encode(self) -> bytes:
        return _ENCODER.encode(self)

    @staticmethod
    def decode(raw: bytes) -> AnyEntry:
        return _DECODER.decode(raw)


class FiringEntry(TimerEntry, frozen=True, kw_only=True):
    """An entry whose firing runs the job it holds: a job's or a retry's."""

    job: JobSubmitted

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def spec(self) -> JobSpec:
        return self.job.spec

    @property
    def owner(self) -> str:
        return self.job.spec.owner


class JobEntry(FiringEntry, frozen=True, kw_only=True, tag="job"):
    """A submitted job's schedule: its one run, or its cron's next."""

    kind: ClassVar[Kind] = "job"


class RetryEntry(FiringEntry, frozen=True, kw_only=True, tag="retry"):
    """One more attempt of a job that failed (``attempt``, after ``errors``)."""

    kind: ClassVar[Kind] = "retry"
    resume_from: Checkpoint | None = None
    """The job's latest checkpoint: its execution hands it to the handler."""


class MarkerEntry(TimerEntry, frozen=True, kw_only=True, tag="marker"):
    """Keeps a repeat a no-op until ``due_ms``: a resubmission of a fired job, a late
    retry request (its ``attempt`` fired, or the job was cancelled), an ended workflow."""

    kind: ClassVar[Kind] = "marker"
    job: Marker

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def owner(self) -> str:
        return ""


class ScheduleEntry(TimerEntry, frozen=True, kw_only=True, tag="workflow"):
    """A recurring workflow's next time: its firing submits a run of the template."""

    kind: ClassVar[Kind] = "workflow"
    job: RecurringWorkflow

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def owner(self) -> str:
        return self.job.spec.owner

    @property
    def cron(self) -> CronSchedule:
        return self.job.spec.cron


class DebounceEntry(TimerEntry, frozen=True, kw_only=True, tag="debounce"):
    """A debounce key's open window, due when it closes; its timer id is the key's
    collapse key (pipeline/model/collapse.py)."""

    kind: ClassVar[Kind] = "debounce"
    job: JobSubmitted
    """The submission whose spec the run takes (the last, or the first: its keep)."""
    run_id: str
    """The run's job id, derived from the window's first submission."""
    run_idempotency_key: str
    opened_ms: int
    joined: int = 1
    """Submissions the window holds so far."""

    @property
    def job_id(self) -> str:
        return self.run_id

    @property
    def owner(self) -> str:
        return self.job.spec.owner


class SingletonEntry(TimerEntry, frozen=True, kw_only=True, tag="singleton"):
    """A singleton key's current job and the one waiting behind it. Out of the schedule
    (``blocked``): the current job's end (SingletonEnded) moves it on, not an instant."""

    kind: ClassVar[Kind] = "singleton"
    current: str
    """The job id of the key's job that has not ended."""
    key_owner: str
    waiting: JobSubmitted | None = None
    """REPLACE: the submission to run when the current one ends."""

    @property
    def job_id(self) -> str:
        return self.current

    @property
    def owner(self) -> str:
        return self.key_owner


Firing = JobEntry | RetryEntry
"""An entry whose firing runs a job (a :class:`FiringEntry`)."""
AnyEntry = JobEntry | RetryEntry | MarkerEntry | ScheduleEntry | DebounceEntry | SingletonEntry
"""An entry as the store holds it: one of the kinds."""

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(AnyEntry)
