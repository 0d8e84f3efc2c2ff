"""The records the engine passes: one frozen type per Avro record of schemas/, and the event.

Each type mirrors its schema field for field, in its order, with its defaults; Avro enums
are :class:`~enum.StrEnum` members, so a member equals the symbol read off the wire.
The serde converts at the edge only (pipeline/serde/avro.py): a decoded record arrives as
its type, and a type is written as its record. tests/pipeline/model/test_records.py holds
every type to its schema.

They are msgspec Structs: ``python -m jobstream._ops.bench.records`` measured them converting a
decoded record in 0.8-1.7 µs, 5-9 times less than dataclasses (docs/benchmarks.md, "Typed
records"). A changed copy is :func:`evolve` of one.

Nothing here imports the rest of the engine beyond the vocabularies it names
(lifecycle kinds, cron policies).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import msgspec

from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.scheduling.cron import (
    MisfirePolicy,
    OverlapPolicy,
    RepeatedHourPolicy,
    SkippedHourPolicy,
)


class Priority(StrEnum):
    """io.jobstream.Priority: which of a type's due jobs a worker takes first."""

    HIGH = "HIGH"
    NORMAL = "NORMAL"
    LOW = "LOW"


class ParentFailurePolicy(StrEnum):
    """What a workflow's child does when a parent did not succeed."""

    CANCEL = "CANCEL"
    RUN = "RUN"


class ScheduleAction(StrEnum):
    PAUSE = "PAUSE"
    RESUME = "RESUME"
    UPDATE = "UPDATE"


class StepOutcome(StrEnum):
    """How a job of a workflow ended: the symbols of io.jobstream.StepOutcome."""

    UNKNOWN = "UNKNOWN"
    SUCCEEDED = "SUCCEEDED"
    DEAD_LETTERED = "DEAD_LETTERED"
    CANCELLED = "CANCELLED"
    EXPIRED = "EXPIRED"


class DebounceKeep(StrEnum):
    """Whose params a debounced run takes: the window's last submission or its first."""

    LAST = "LAST"
    FIRST = "FIRST"


class SingletonMode(StrEnum):
    """What a new submission of a busy singleton key does."""

    DROP = "DROP"
    REPLACE = "REPLACE"


class WorkerState(StrEnum):
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    DRAINING = "DRAINING"
    STOPPED = "STOPPED"


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """The base of every record type: frozen, fields by keyword.

    ``record["field"]`` and ``record.get("field")`` read a field by its name, as a decoded
    dict did: tests and JSON-minded readers use them; the engine reads attributes.
    """

    def __getitem__(self, name: str) -> Any:
        try:
            return getattr(self, name)
        except AttributeError:
            raise KeyError(name) from None

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name, default)

    def keys(self) -> tuple[str, ...]:
        return self.__struct_fields__

    def __contains__(self, name: object) -> bool:
        return name in self.__struct_fields__


R = TypeVar("R", bound=Record)


def evolve(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes``."""
    return msgspec.structs.replace(record, **changes)


class CronSchedule(Record, frozen=True, kw_only=True):
    expression: str
    timezone: str = "UTC"
    start_at_ms: int | None = None
    end_at_ms: int | None = None
    max_runs: int | None = None
    skipped_hour: SkippedHourPolicy = SkippedHourPolicy.RUN_AFTER
    repeated_hour: RepeatedHourPolicy = RepeatedHourPolicy.FIRST
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    catchup_window_ms: int = 3_600_000
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    jitter_ms: int = 0


class RetryPolicyRecord(Record, frozen=True, kw_only=True):
    """io.jobstream.RetryPolicy as it travels; its rules are
    :class:`jobstream._pipeline.model.retry.RetryPolicy`."""

    max_attempts: int = 3
    initial_backoff_ms: int = 1000
    backoff_coefficient: float = 2.0
    max_backoff_ms: int = 300_000
    jitter: float = 0.1
    non_retryable_errors: list[str] = []


class JobKeys(Record, frozen=True, kw_only=True):
    """io.jobstream.JobKeys: its rules are :mod:`jobstream._pipeline.model.keys`."""

    concurrency_key: str | None = None
    concurrency_limit: int = 1
    rate_key: str | None = None
    rate: str | None = None
    debounce_key: str | None = None
    debounce_window_ms: int = 0
    debounce_max_ms: int | None = None
    debounce_keep: DebounceKeep = DebounceKeep.LAST
    singleton_key: str | None = None
    singleton_mode: SingletonMode = SingletonMode.DROP


class JobSpec(Record, frozen=True, kw_only=True):
    job_type: str
    owner: str
    params: str = "{}"
    priority: Priority = Priority.NORMAL
    run_at_ms: int | None = None
    cron: CronSchedule | None = None
    depends_on: list[str] = []
    retry: RetryPolicyRecord | None = None
    timeout_ms: int | None = None
    labels: dict[str, str] = {}
    on_parent_failure: ParentFailurePolicy = ParentFailurePolicy.CANCEL
    pool: str | None = None
    deadline_ms: int | None = None
    queue_limit_ms: int | None = None
    job_keys: JobKeys | None = None


class ErrorInfo(Record, frozen=True, kw_only=True):
    attempt: int
    error_type: str
    message: str
    traceback: str | None = None
    retryable: bool = True
    at_ms: int
    worker_id: str | None = None


class ParentResultRecord(Record, frozen=True, kw_only=True):
    job_id: str
    outcome: StepOutcome
    result: str | None = None
    result_uri: str | None = None
    step: str | None = None


class Progress(Record, frozen=True, kw_only=True):
    fraction: float
    message: str | None = None
    at_ms: int


class Checkpoint(Record, frozen=True, kw_only=True):
    """A run's saved progress (``ctx.checkpoint``): pipeline/worker/checkpoints.py."""

    state: bytes
    json: bool = True
    attempt: int
    execution_id: str
    at_ms: int


class JobSubmitted(Record, frozen=True, kw_only=True):
    job_id: str
    idempotency_key: str | None = None
    workflow_id: str | None = None
    submitted_at_ms: int
    spec: JobSpec
    submitted_by: str | None = None


class ExecutionRequested(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    execution_id: str
    attempt: int = 1
    epoch: int = 0
    scheduled_at_ms: int
    fired_at_ms: int
    deadline_ms: int | None = None
    spec: JobSpec
    idempotency_key: str | None = None
    errors: list[ErrorInfo] = []
    parent_results: list[ParentResultRecord] = []
    resume_from: Checkpoint | None = None


class JobLifecycle(Record, frozen=True, kw_only=True):
    kind: LifecycleKind
    job_id: str
    workflow_id: str | None = None
    at_ms: int
    job_type: str = ""
    owner: str = ""
    attempt: int = 0
    epoch: int = 0
    execution_id: str | None = None
    worker_id: str | None = None
    scheduled_at_ms: int | None = None
    lateness_ms: int | None = None
    error: ErrorInfo | None = None
    result: str | None = None
    result_uri: str | None = None
    detail: str | None = None
    waiting_for: list[str] = []
    step: str | None = None
    created_at_ms: int | None = None
    labels: dict[str, str] = {}
    params: str | None = None
    params_bytes: int | None = None
    params_sha256: str | None = None
    throttled_ms: int | None = None
    requested_by: str | None = None
    progress: Progress | None = None
    log_lines: int | None = None
    deadline_ms: int | None = None
    queue_limit_ms: int | None = None
    pool: str | None = None
    checkpoint: Checkpoint | None = None
    job_keys: JobKeys | None = None
    held_by: str | None = None
    joined_job_id: str | None = None
    submitted_by: str | None = None
    launched_at_ms: int | None = None
    execution: ExecutionRequested | None = None


class RetryScheduled(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    attempt: int
    epoch: int = 0
    retry_at_ms: int
    spec: JobSpec
    errors: list[ErrorInfo] = []
    idempotency_key: str | None = None
    resume_from: Checkpoint | None = None


class DeadLettered(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    idempotency_key: str | None = None
    dead_lettered_at_ms: int
    reason: str
    attempts: int
    spec: JobSpec
    errors: list[ErrorInfo] = []
    resume_from: Checkpoint | None = None


class JobCancelled(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    requested_at_ms: int
    reason: str | None = None
    requested_by: str | None = None


class JobTriggered(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    requested_at_ms: int
    reason: str | None = None
    requested_by: str | None = None
    owner: str | None = None


class ScheduleChanged(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    requested_at_ms: int
    action: ScheduleAction
    cron: CronSchedule | None = None
    params: str | None = None
    run_at_ms: int | None = None
    reason: str | None = None
    requested_by: str | None = None
    owner: str | None = None
    steps: list[WorkflowStep] | None = None


class CancelRequested(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str | None = None
    requested_at_ms: int
    up_to_epoch: int = 0
    requested_by: str | None = None
    reason: str | None = None


class StepEnded(Record, frozen=True, kw_only=True):
    job_id: str
    workflow_id: str
    owner: str | None = None
    outcome: StepOutcome
    ended_at_ms: int
    result: str | None = None
    result_uri: str | None = None
    detail: str | None = None


class SingletonEnded(Record, frozen=True, kw_only=True):
    job_id: str
    owner: str
    singleton_key: str
    state: str
    ended_at_ms: int


class WorkflowStep(Record, frozen=True, kw_only=True):
    name: str
    depends_on: list[str] = []
    spec: JobSpec


class WorkflowSubmitted(Record, frozen=True, kw_only=True):
    workflow_id: str
    idempotency_key: str | None = None
    owner: str
    submitted_at_ms: int
    steps: list[WorkflowStep]
    schedule: CronSchedule | None = None
    schedule_id: str | None = None


class WorkflowCancelled(Record, frozen=True, kw_only=True):
    workflow_id: str
    owner: str | None = None
    requested_at_ms: int
    reason: str | None = None
    requested_by: str | None = None


class WorkflowSignalled(Record, frozen=True, kw_only=True):
    workflow_id: str
    owner: str
    name: str
    payload: str | None = None
    reject: bool = False
    step: str | None = None
    sent_at_ms: int
    reason: str | None = None
    requested_by: str | None = None


class WorkerHeartbeat(Record, frozen=True, kw_only=True):
    worker_id: str
    host: str
    pid: int
    job_types: list[str]
    capacity: int
    running: list[str] = []
    state: WorkerState = WorkerState.RUNNING
    started_at_ms: int
    at_ms: int
    pool: str | None = None


RECORD_TYPES: dict[str, type[Record]] = {
    "CronSchedule": CronSchedule,
    "RetryPolicy": RetryPolicyRecord,
    "JobKeys": JobKeys,
    "JobSpec": JobSpec,
    "ErrorInfo": ErrorInfo,
    "ParentResult": ParentResultRecord,
    "Progress": Progress,
    "Checkpoint": Checkpoint,
    "WorkflowStep": WorkflowStep,
    "JobSubmitted": JobSubmitted,
    "ExecutionRequested": ExecutionRequested,
    "JobLifecycle": JobLifecycle,
    "RetryScheduled": RetryScheduled,
    "DeadLettered": DeadLettered,
    "JobCancelled": JobCancelled,
    "JobTriggered": JobTriggered,
    "ScheduleChanged": ScheduleChanged,
    "CancelRequested": CancelRequested,
    "StepEnded": StepEnded,
    "SingletonEnded": SingletonEnded,
    "WorkflowSubmitted": WorkflowSubmitted,
    "WorkflowCancelled": WorkflowCancelled,
    "WorkflowSignalled": WorkflowSignalled,
    "WorkerHeartbeat": WorkerHeartbeat,
}
"""Each Avro record's type by its name (without namespace)."""


class Identified(Protocol):
    """A job known by its identity and type, not by its spec (the status processor's
    record of it)."""

    @property
    def job_id(self) -> str: ...
    @property
    def workflow_id(self) -> str | None: ...
    @property
    def job_type(self) -> str: ...
    @property
    def owner(self) -> str: ...


About = JobSubmitted | ExecutionRequested | RetryScheduled | DeadLettered | Identified
"""What a lifecycle event can be about: a job's record, or a job known by its identity."""


def lifecycle(kind: LifecycleKind, about: About, *, at_ms: int, **fields: Any) -> JobLifecycle:
    """The one builder of JobLifecycle: the fields every kind carries, taken from the job it
    is ``about`` (with an ExecutionRequested, its attempt, epoch and execution id too);
    ``fields`` adds (or overrides) the rest."""
    if isinstance(about, ExecutionRequested):
        fields = {"attempt": about.attempt, "epoch": about.epoch,
                  "execution_id": about.execution_id, **fields}  # fmt: skip
    if isinstance(about, _SPECCED):
        job_type, owner = about.spec.job_type, about.spec.owner
    else:
        job_type, owner = about.job_type, about.owner
    return JobLifecycle(kind=kind, job_id=about.job_id, workflow_id=about.workflow_id,
                        at_ms=at_ms, job_type=fields.pop("job_type", job_type),
                        owner=fields.pop("owner", owner), **fields)  # fmt: skip


_SPECCED = (JobSubmitted, ExecutionRequested, RetryScheduled, DeadLettered)
"""The records that carry their job's spec (a tuple: ``isinstance`` with a union of
classes would build the union on every call)."""


def typed(name: str, data: Any) -> Record:
    """The record ``name`` of a decoded value (a dict as fastavro gives it)."""
    return msgspec.convert(data, RECORD_TYPES[name])


def plain(record: Record) -> dict[str, Any]:
    """The record as the Avro writer takes it: dicts, lists and symbols."""
    built: dict[str, Any] = msgspec.to_builtins(record, builtin_types=(bytes,))
    return built


@dataclass(frozen=True, slots=True)
class Event:
    """One record on a topic: which event it is and its fields."""

    name: str
    """Event name without namespace, e.g. ``JobSubmitted``."""
    data: Any
    """The record, as its type (:data:`RECORD_TYPES`); a dict of its fields is accepted
    too where a record is written, and typed by the writer."""

    @classmethod
    def of(cls, record: Record) -> Event:
        """The event of a record: its name is its type's."""
        return cls(type(record).__name__, record)
