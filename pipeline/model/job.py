"""A job submission: the user-facing model, its Avro event, and the checks on records.

:class:`JobRequest` is what a Python caller, the CLI and the HTTP API build; ``to_event``
turns it into the JobSubmitted record that goes on jobs.intake. :func:`validate_submitted`
applies the same rules to a JobSubmitted record read from the topic, whoever produced it
(its decoding has already given every field its type): the timer processor calls it once,
where the record enters (pipeline/timers/intake.py), and sends refusals to the intake
dead-letter topic. Both raise
:class:`jobstream._pipeline.errors.ValidationError` whose ``field`` is the record path at fault
(``spec.params``, ``spec.cron.timezone``, ``idempotency_key``), so a CLI user, an HTTP client
and a dead-letter reader all see the same name.

The rules live in three places, each used by both paths: field rules in
:mod:`jobstream._pipeline.model.rules`, the cron rules in
:class:`jobstream._pipeline.scheduling.CronSpec`, and the
record rules below (:func:`_check_envelope`, :func:`_check_run_at`, :func:`_check_deadline`,
:func:`_check_consistency`).

Record rules depend only on the record, never on when it is read: the requested run time is checked
against ``submitted_at_ms`` (not the reader's clock), so replaying jobs.intake days later
to rebuild the timer state accepts exactly what was accepted the first time. ``now_ms`` only
bounds ``submitted_at_ms`` from above (a client clock far ahead), which replay cannot break.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    InstanceOf,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic import ValidationError as PydanticValidationError

from jobstream._pipeline.avro_bounds import INT_MAX, LONG_MAX
from jobstream._pipeline.clock import ONE_MS, instant_of, ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.held import check_held, is_held
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.keys import Keys, check_keys, request_fields
from jobstream._pipeline.model.records import (
    CronSchedule,
    Event,
    JobKeys,
    JobSpec,
    JobSubmitted,
    ParentFailurePolicy,
    Priority,
    RetryPolicyRecord,
    evolve,
)
from jobstream._pipeline.model.retry import RetryPolicy
from jobstream._pipeline.scheduling import CronSpec, new_job_id, next_due_ms, normalize_fire_time
from jobstream._pipeline.scheduling.one_off import DEFAULT_MAX_FUTURE_MS

EARLIEST_SUBMITTED_AT_MS = 1_577_836_800_000
"""2020-01-01T00:00Z: an earlier ``submitted_at_ms`` is a unit mistake (seconds for ms)."""
MAX_CLOCK_SKEW_MS = 10 * 60_000
"""How far ahead of the reader's clock a client's ``submitted_at_ms`` may be."""

def _pydantic_error(exc: PydanticValidationError, paths: Mapping[str, str]) -> ValidationError:
    """The first of pydantic's errors, as a ValidationError on the record path."""
    error = exc.errors()[0]
    head, *rest = error["loc"] or ("",)
    field = ".".join([paths.get(str(head), str(head)), *map(str, rest)]).strip(".")
    kind = error["type"]
    if kind == "value_error":
        message = str(error.get("ctx", {}).get("error", error["msg"]))
    elif kind == "missing":
        message = "is required"
    elif kind in ("extra_forbidden", "unexpected_keyword_argument"):  # a model's, a dataclass's
        message = "is not a known field"
    else:
        message = error["msg"][:1].lower() + error["msg"][1:]
    return ValidationError(field, message)


class _Model(BaseModel):
    """A frozen model whose constructor raises jobstream._pipeline.errors.ValidationError only.

    The values its validators build raise ValidationErrors that already name the record
    path (CronSpec: ``spec.cron.<field>``; :func:`_retry_policy`: ``spec.retry.<field>``):
    they pass through pydantic untouched, since it collects ValueError and AssertionError
    only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
    _paths: ClassVar[Mapping[str, str]] = {}

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            error = _pydantic_error(exc, self._paths)
            raise error from None


def _retry_policy(value: object, parse: ValidatorFunctionWrapHandler) -> RetryPolicy:
    """``spec.retry`` as the retry router's RetryPolicy, every error naming its field.

    pydantic converts the fields by the dataclass's types (text as typed on the command
    line; a list of error types, not a bare string) and refuses unknown ones, the policy's
    constructor applies its rules, and the bounds of the Avro record's int and longs come
    last.
    """
    if isinstance(value, RetryPolicyRecord):  # a record's policy: its fields
        value = {name: getattr(value, name) for name in value.__struct_fields__}
    if not isinstance(value, Mapping | RetryPolicy):
        raise ValidationError("spec.retry", "input should be a valid dictionary or instance of "
                                            "RetryPolicy")  # fmt: skip
    try:
        policy: RetryPolicy = parse(value)
    except ValidationError as exc:  # the policy's own rules name retry.<field>
        raise ValidationError("spec." + exc.field, exc.message) from None
    for name in ("initial_backoff_ms", "max_backoff_ms"):
        if getattr(policy, name) > LONG_MAX:
            raise ValidationError(
                f"spec.retry.{name}", f"input should be less than or equal to {LONG_MAX}"
            )
    if policy.max_attempts > INT_MAX:
        raise ValidationError("spec.retry.max_attempts", f"must be at most {INT_MAX}")
    return policy


def _no_number(value: object) -> object:
    """pydantic would read a number as seconds or milliseconds, guessing from its size."""
    if isinstance(value, int | float):
        raise ValueError("must be a time-zone-aware datetime or ISO 8601 text, not a number")
    return value


_DEADLINE_FORMS = ("an instant (a time-zone-aware datetime, or ISO 8601 text such as "
                   "2026-12-01T09:00Z) or a duration from the submission (a timedelta, or ISO "
                   "8601 text such as PT30M)")  # fmt: skip


def _deadline(value: object, parse: ValidatorFunctionWrapHandler) -> object:
    """``deadline`` as an aware datetime or a positive timedelta, or one error that says
    both forms (pydantic's would name each member of the union)."""
    if isinstance(value, int | float):
        raise ValueError(f"must be {_DEADLINE_FORMS}, not a number")
    try:
        parsed = parse(value)
    except PydanticValidationError:
        raise ValueError(f"must be {_DEADLINE_FORMS}, got {value!r}") from None
    if isinstance(parsed, timedelta) and parsed <= timedelta(0):
        raise ValueError("must be a positive duration from the submission")
    return parsed


def cron_spec(value: object) -> object:
    """A CronSpec from a CronSpec, a bare expression (read in UTC) or a mapping of its fields.

    Anything else is returned as it is, for pydantic to refuse. Errors name
    ``spec.cron.<field>``, as CronSpec's own do.
    """
    if isinstance(value, str):
        return CronSpec(expression=value)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(CronSpec.__dataclass_fields__))
        if unknown:
            raise ValidationError(f"spec.cron.{unknown[0]}", "is not a field of CronSchedule")
        if "expression" not in value:
            raise ValidationError("spec.cron.expression", "is required")
        return CronSpec(**value)
    return value


def cron_record(spec: CronSpec) -> CronSchedule:
    """The CronSchedule record of a schedule."""
    return CronSchedule(**{name: getattr(spec, name) for name in CronSchedule.__struct_fields__})


def cron_of(record: CronSchedule) -> CronSpec:
    """The schedule of a CronSchedule record, checked by CronSpec (errors name
    ``spec.cron.<field>``)."""
    return CronSpec(**{name: getattr(record, name) for name in record.__struct_fields__})


JobId = Annotated[str, AfterValidator(rules.job_id)]


class JobRequest(_Model):
    """A job to submit: what to run, for whom, when, and how to retry it.

    Constructing one checks every field rule and raises ValidationError naming the record
    path at fault. Rules that need the submission instant (how far ``run_at`` may be) run
    in :meth:`to_event`.
    """

    _paths: ClassVar[Mapping[str, str]] = {
        "job_type": "spec.job_type",
        "owner": "spec.owner",
        "params": "spec.params",
        "priority": "spec.priority",
        "run_at": "spec.run_at_ms",
        "cron": "spec.cron",
        "depends_on": "spec.depends_on",
        "retry": "spec.retry",
        "timeout_ms": "spec.timeout_ms",
        "labels": "spec.labels",
        "on_parent_failure": "spec.on_parent_failure",
        "pool": "spec.pool",
        "deadline": "spec.deadline_ms",
        "queue_limit_ms": "spec.queue_limit_ms",
        "keys": "spec.job_keys",
    }

    job_type: Annotated[str, AfterValidator(rules.job_type)]
    """Handler name, e.g. ``report.generate``; also part of the execution topic's name."""
    owner: Annotated[str, AfterValidator(rules.owner)]
    """Application, user or tenant that owns the job."""
    params: Annotated[dict[str, Any], BeforeValidator(rules.params)] = Field(default_factory=dict)
    """A JSON object (a mapping, or JSON text), at most 1 MB encoded."""
    priority: Annotated[Literal["HIGH", "NORMAL", "LOW"], BeforeValidator(rules.priority)] = (
        "NORMAL"
    )
    """Execution tier; ``high``, ``normal`` or ``low`` in any case."""
    run_at: Annotated[AwareDatetime | None, BeforeValidator(_no_number)] = None
    """One-off jobs: when to run; None means now. Excludes ``cron``."""
    cron: Annotated[InstanceOf[CronSpec] | None, BeforeValidator(cron_spec)] = None
    """Recurring jobs: the schedule. Excludes ``run_at``."""
    depends_on: tuple[JobId, ...] = ()
    """Job ids of the same workflow that must succeed first (needs ``workflow_id``)."""
    on_parent_failure: Annotated[Literal["CANCEL", "RUN"], BeforeValidator(rules.policy)] = "CANCEL"
    """When a parent ends DEAD_LETTERED or CANCELLED: cancel this job, or run it anyway."""
    retry: Annotated[RetryPolicy, WrapValidator(_retry_policy)] | None = None
    """None takes the job type's default policy."""
    timeout_ms: int | None = Field(default=None, gt=0, le=LONG_MAX)
    """Per-attempt timeout; None takes the job type's default."""
    idempotency_key: Annotated[str, AfterValidator(rules.idempotency_key)] | None = None
    """Makes the job id deterministic, see
    :func:`jobstream._pipeline.model.idempotency.idempotent_job_id`."""
    workflow_id: Annotated[str, AfterValidator(rules.workflow_id)] | None = None
    """The DAG this job belongs to; the partition key when set."""
    labels: Annotated[dict[str, str], AfterValidator(rules.labels)] = Field(default_factory=dict)
    """Free-form ``name: value`` labels, searchable as ``label=name=value``; at most
    ``rules.MAX_LABELS``, a name without ``=``."""
    pool: Annotated[str, AfterValidator(rules.pool)] | None = None
    """The worker pool the job must run in (e.g. ``gpu``); None: any worker of the type."""
    deadline: Annotated[AwareDatetime | timedelta, WrapValidator(_deadline)] | None = None
    """The whole job's deadline, across attempts: an instant (as ``run_at``), or a duration
    from the submission (a timedelta, or ISO 8601 text such as ``PT30M``). No attempt
    starts at or past it; the job then ends EXPIRED. One-off jobs only."""
    queue_limit_ms: int | None = Field(default=None, gt=0, le=LONG_MAX)
    """The longest one attempt may stay QUEUED before a worker starts it; past it the job
    ends EXPIRED. One-off jobs only."""
    keys: Keys | None = None
    """Concurrency, rate, debounce and singleton keys (:mod:`jobstream._pipeline.model.keys`),
    as a Keys or its mapping; a key's ``{params...}`` and ``{labels...}`` paths are filled
    from this job."""

    @field_validator("cron")
    @classmethod
    def _one_schedule(cls, value: CronSpec | None, info: ValidationInfo) -> CronSpec | None:
        if value is not None and info.data.get("run_at") is not None:
            raise ValueError("cannot be set together with run_at: a job is one-off or recurring")
        return value

    @field_validator("depends_on")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for job_id in value:
            if job_id in seen:
                raise ValueError(f"lists {job_id} twice")
            seen.add(job_id)
        return value

    def to_event(self, now_ms: int, *, submitted_by: str | None = None) -> Event:
        """The JobSubmitted event for a submission at ``now_ms`` by ``submitted_by`` (who
        sends it: ``api:acme``, ``kafka:User:jobstream-client``), with its job id.

        The id is a fresh ULID, or the deterministic id of the idempotency key. Raises
        ValidationError when ``run_at`` is out of range for ``now_ms``.
        """
        if self.idempotency_key is not None:
            job_id = idempotent_job_id(self.owner, self.idempotency_key)
        else:
            job_id = new_job_id(now_ms)
        record = JobSubmitted(
            job_id=job_id,
            idempotency_key=self.idempotency_key,
            workflow_id=self.workflow_id,
            submitted_at_ms=now_ms,
            spec=JobSpec(
                job_type=self.job_type,
                owner=self.owner,
                params=rules.field_check("spec.params", rules.encode_params, self.params),
                priority=Priority(self.priority),
                run_at_ms=None if self.run_at is None else ms_of(self.run_at),
                cron=None if self.cron is None else cron_record(self.cron),
                depends_on=list(self.depends_on),
                retry=None if self.retry is None else RetryPolicyRecord(**self.retry.to_avro()),
                timeout_ms=self.timeout_ms,
                labels=dict(self.labels),
                on_parent_failure=ParentFailurePolicy(self.on_parent_failure),
                pool=self.pool,
                deadline_ms=self._deadline_ms(now_ms),
                queue_limit_ms=self.queue_limit_ms,
                job_keys=self._job_keys(),
            ),
            submitted_by=submitted_by,
        )
        _check_envelope(record, now_ms=now_ms)
        _check_run_at(record)
        _check_deadline(record)
        _check_consistency(record, self)
        return Event.of(record)

    def _job_keys(self) -> JobKeys | None:
        if self.keys is None:
            return None
        keys = self.keys
        return rules.field_check("spec.job_keys",
                                 lambda _: keys.record(self.params, self.labels), keys)  # fmt: skip

    def _deadline_ms(self, now_ms: int) -> int | None:
        deadline = self.deadline
        if isinstance(deadline, timedelta):
            return now_ms + deadline // ONE_MS
        return None if deadline is None else ms_of(deadline)


def validate_submitted(record: JobSubmitted, *, now_ms: int) -> None:
    """Apply every submission rule to a JobSubmitted record; ValidationError if broken.

    Its decoding gave each field its type (a ``spec``, an integer ``submitted_at_ms``):
    what remains are the rules on values. ``now_ms`` is the reader's clock; see the module
    docstring for why it matters so little.
    """
    _check_envelope(record, now_ms=now_ms)
    _check_run_at(record)
    _check_deadline(record)
    _check_consistency(record, _checked_request(record))
    if is_held(record.spec):
        check_held(record.spec, record.workflow_id)


_CHECKED_KEPT = 4096
"""Specs remembered as passing the field rules (a producer's jobs mostly share theirs)."""
_checked: dict[bytes, JobRequest] = {}
_spec_key = msgspec.msgpack.Encoder()
"""MessagePack, not JSON: a float keeps its bits (JSON writes NaN and the infinities as null)."""


def _checked_request(record: JobSubmitted) -> JobRequest:
    """The record's fields passed through JobRequest's rules; remembered per spec.

    Building the model took a sixth of the timers' CPU (docs/benchmarks.md, "Python per
    record"), while the jobs of one producer differ mostly in their parameters and
    fire time. So a request is kept per spec with those two left out; a record of a known
    spec checks only its parameters (the same rule), and any failure takes the full build,
    which words the error. The request returned serves :func:`_check_consistency`: its
    ``params``, ``run_at`` and ``deadline`` are those of the first record of its spec
    (:func:`_check_deadline` checks the record's own).
    """
    spec = record.spec
    shape = evolve(spec, params="", run_at_ms=None if spec.run_at_ms is None else 0,
                   deadline_ms=None if spec.deadline_ms is None else 0)  # fmt: skip
    key = _spec_key.encode((shape, record.idempotency_key, record.workflow_id))
    request = _checked.get(key)
    if request is not None:
        try:
            rules.params(spec.params)
            return request
        except ValueError:
            pass  # the full build below names it
    request = _request_of(record)
    if len(_checked) >= _CHECKED_KEPT:
        _checked.clear()
    _checked[key] = request
    return request


def _request_of(record: JobSubmitted) -> JobRequest:
    """The JobRequest a record stands for, built through the same field rules."""
    spec = record.spec  # its run_at_ms and deadline_ms are in range: checked first
    fields: dict[str, object] = {
        "job_type": spec.job_type, "owner": spec.owner, "params": spec.params,
        "priority": spec.priority, "depends_on": spec.depends_on, "retry": spec.retry,
        "on_parent_failure": spec.on_parent_failure, "timeout_ms": spec.timeout_ms,
        "labels": spec.labels, "pool": spec.pool, "queue_limit_ms": spec.queue_limit_ms,
        "idempotency_key": record.idempotency_key, "workflow_id": record.workflow_id,
        "run_at": None if spec.run_at_ms is None else instant_of(spec.run_at_ms),
        "cron": None if spec.cron is None else cron_of(spec.cron),
        "deadline": None if spec.deadline_ms is None else instant_of(spec.deadline_ms),
        "keys": None if spec.job_keys is None else request_fields(spec.job_keys),
    }  # fmt: skip
    # The record's forms (JSON text, a list, enums, the RetryPolicy record) are what the
    # field rules take: they convert them as they do a caller's.
    return JobRequest(**fields)  # type: ignore[arg-type]


def _check_envelope(record: JobSubmitted, *, now_ms: int) -> None:
    """The job id's shape, and a ``submitted_at_ms`` that is plausibly epoch milliseconds."""
    rules.field_check("job_id", rules.job_id, record.job_id)
    submitted = record.submitted_at_ms
    if submitted < EARLIEST_SUBMITTED_AT_MS:
        raise ValidationError(
            "submitted_at_ms", f"is before 2020-01-01 ({submitted}): seconds, not milliseconds?"
        )
    if submitted > now_ms + MAX_CLOCK_SKEW_MS:
        raise ValidationError(
            "submitted_at_ms",
            f"is {submitted - now_ms} ms ahead of this clock (at most {MAX_CLOCK_SKEW_MS})",
        )


def _check_run_at(record: JobSubmitted) -> None:
    """A requested run time in the range normalize_fire_time accepts, from the submission."""
    normalize_fire_time(record.spec.run_at_ms, now_ms=record.submitted_at_ms)


def _check_deadline(record: JobSubmitted) -> None:
    """A deadline after the submission and the requested run time, within the range of a
    run time; neither limit on a recurring job (its schedule's ``end_at`` ends it)."""
    spec, submitted = record.spec, record.submitted_at_ms
    for field, value in (("deadline_ms", spec.deadline_ms),
                         ("queue_limit_ms", spec.queue_limit_ms)):  # fmt: skip
        if value is not None and spec.cron is not None:
            raise ValidationError(f"spec.{field}", "a recurring job takes no deadline nor "
                                  "queue limit: its schedule's end_at ends it")  # fmt: skip
    deadline = spec.deadline_ms
    if deadline is None:
        return
    if deadline <= submitted:
        raise ValidationError("spec.deadline_ms", f"is not after the submission "
                              f"({submitted - deadline} ms before it)")  # fmt: skip
    if deadline > submitted + DEFAULT_MAX_FUTURE_MS:
        raise ValidationError("spec.deadline_ms", f"is more than {DEFAULT_MAX_FUTURE_MS} ms "
                              "after the submission")  # fmt: skip
    if spec.run_at_ms is not None and deadline <= spec.run_at_ms:
        raise ValidationError("spec.deadline_ms", "is not after run_at: no attempt could start")


def _check_consistency(record: JobSubmitted, request: JobRequest) -> None:
    """Rules across fields: the id matches the key, no self-dependency, the schedule runs."""
    job_id = record.job_id
    if request.idempotency_key is not None:
        expected = idempotent_job_id(request.owner, request.idempotency_key)
        if job_id != expected:
            raise ValidationError(
                "job_id",
                f"must be {expected}, the id of this owner and idempotency key "
                "(see jobstream._pipeline.model.idempotency.idempotent_job_id)",
            )
    if job_id in request.depends_on:
        raise ValidationError("spec.depends_on", "lists the job itself")
    if request.depends_on and request.workflow_id is None:
        raise ValidationError("spec.depends_on", "needs a workflow_id: dependencies are "
                                                 "between jobs of one workflow")  # fmt: skip
    if request.depends_on and request.cron is not None:
        raise ValidationError("spec.depends_on", "a recurring job cannot wait for other jobs")
    check_keys(record)
    if request.cron is not None:
        submitted = record.submitted_at_ms
        if next_due_ms(request.cron, submitted - 1, job_id=job_id) is None:
            raise ValidationError("spec.cron", "has no run at or after the submission time")
