"""A workflow submitted as one unit: its steps, its Avro event, and the checks on records.

:func:`workflow_event` is what the Python client and the CLI call; it builds a
WorkflowSubmitted record and applies :func:`expand_workflow`, the very checks the timers
apply to a record from any Kafka client. Nothing of a workflow runs unless all of it is
valid: every step passes the job rules (errors name ``steps.<i>.<field>``), the graph has
no unknown parent and no cycle (``steps: cycle: a -> b -> a``), and it has at most
:data:`~jobstream._pipeline.workflows.MAX_STEPS` steps.

A step's job id is derived from the owner, the workflow id and the step's name
(:func:`~jobstream._pipeline.workflows.step_job_id`), so a resubmitted workflow is the same jobs and
another owner's workflow of the same name is other jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.held import MAP_TYPE, SLEEP_TYPE, WAIT_TYPE, Map, held_step
from jobstream._pipeline.model.job import JobRequest, cron_of, validate_submitted
from jobstream._pipeline.model.labels import STEP_LABEL as STEP_LABEL
from jobstream._pipeline.model.records import (
    CronSchedule,
    JobSubmitted,
    WorkflowStep,
    WorkflowSubmitted,
    evolve,
)
from jobstream._pipeline.scheduling import CronSpec, new_job_id
from jobstream._pipeline.serde import Event
from jobstream._pipeline.workflows import idempotent_workflow_id, step_job_id, topological_order

MAX_STEP_NAME_CHARS = 100
RESERVED_STEP_CHARS = frozenset("[]/")
"""Characters the names of a map's items and of spawned children use
(pipeline/workflows/members.py): a step's own name has none, so no two meet."""
HELD_STEPS = {"wait": WAIT_TYPE, "sleep": SLEEP_TYPE, "map": MAP_TYPE}
"""A step written ``{"name": ..., "wait": {...}}`` is a step of job type jobstream.wait
whose params are the mapping (pipeline/model/held.py); ``sleep`` likewise."""

Fields = Mapping[str, Any]
"""What a caller writes a step or a schedule as (the client, the CLI's file, the API's body):
field names and values, checked into records here."""

_STEP_FIELDS = frozenset({"name", "depends_on", *HELD_STEPS})
"""What a step has besides the fields of a JobRequest (its owner is the workflow's)."""


@contextmanager
def _at(prefix: str) -> Iterator[None]:
    """Errors inside name their field after ``prefix`` (``steps.3.`` + ``spec.params``)."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError(prefix + exc.field, exc.message) from None


def step_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-blank string")
    if len(value) > MAX_STEP_NAME_CHARS:
        raise ValueError(f"is {len(value)} characters, more than {MAX_STEP_NAME_CHARS}")
    reserved = sorted(set(value) & RESERVED_STEP_CHARS)
    if reserved:
        shown = " or ".join(map(repr, reserved))
        raise ValueError(f"must not contain {shown}: a map's items are named '<step>[<i>]' "
                         "and a handler's children '<step>/<key>'")  # fmt: skip
    return value


def workflow_event(owner: str, steps: Iterable[Fields], *, now_ms: int,
                   workflow_id: str | None = None, idempotency_key: str | None = None,
                   schedule: CronSpec | CronSchedule | Fields | str | None = None,
                   ) -> Event:  # fmt: skip
    """The WorkflowSubmitted of ``steps``; ValidationError naming the field at fault.

    A step is a mapping: ``name``, ``depends_on`` (names of other steps) and any field of
    :class:`JobRequest` but ``owner``, ``workflow_id`` and ``idempotency_key``; or, for a
    step the timers hold, ``wait`` or ``sleep`` with its parameters
    (pipeline/model/held.py) in place of a job type and params. Without a
    ``workflow_id`` it is derived from the idempotency key, else a new ULID. With a
    ``schedule`` (a CronSpec, a CronSchedule record, its fields or a bare expression read
    in UTC) the workflow is recurring: each time of the schedule starts a new run of the
    steps; unless the schedule says ``overlap: ALLOW``, no run starts while the previous
    one runs.
    """
    rules.field_check("owner", rules.owner, owner)
    if idempotency_key is not None:
        rules.field_check("idempotency_key", rules.idempotency_key, idempotency_key)
        workflow_id = workflow_id or idempotent_workflow_id(owner, idempotency_key)
    workflow_id = workflow_id or new_job_id(now_ms)
    rules.field_check("workflow_id", rules.workflow_id, workflow_id)
    records = []
    for i, step in enumerate(steps):
        with _at(f"steps.{i}."):
            records.append(_step_record(step, owner, workflow_id, now_ms))
    record = WorkflowSubmitted(
        workflow_id=workflow_id, idempotency_key=idempotency_key, owner=owner,
        submitted_at_ms=now_ms, steps=records, schedule_id=None,
        schedule=None if schedule is None else schedule_record(schedule),
    )  # fmt: skip
    expand_workflow(record, now_ms=now_ms)
    return Event.of(record)


def schedule_record(schedule: CronSpec | CronSchedule | Fields | str,
                     ) -> CronSchedule:  # fmt: skip
    """The CronSchedule of a recurring workflow; its runs do not overlap unless told."""
    if isinstance(schedule, CronSchedule):  # a record tells: checked as the workflow expands
        return schedule
    if not isinstance(schedule, CronSpec):
        fields = {"expression": schedule} if isinstance(schedule, str) else dict(schedule)
        with _renamed("spec.cron.", "schedule."):
            schedule = CronSpec.from_avro({"overlap": "SKIP", **fields})
    return msgspec.convert(schedule.to_avro(), CronSchedule)


@contextmanager
def _renamed(prefix: str, replacement: str) -> Iterator[None]:
    """Errors naming a field under ``prefix`` name it under ``replacement`` instead."""
    try:
        yield
    except ValidationError as exc:
        if not exc.field.startswith(prefix):
            raise
        raise ValidationError(replacement + exc.field[len(prefix) :], exc.message) from None


def check_schedule(record: WorkflowSubmitted) -> CronSpec | None:
    """A WorkflowSubmitted's schedule, checked; None for a workflow that runs once."""
    if record.schedule is None:
        return None
    if record.schedule_id is not None:
        raise ValidationError("schedule", "a run of a recurring workflow has no schedule")
    with _renamed("spec.cron.", "schedule."):
        return cron_of(record.schedule)


def _step_record(step: Fields, owner: str, workflow_id: str,
                 now_ms: int) -> WorkflowStep:  # fmt: skip
    if not isinstance(step, Mapping):
        raise ValidationError("", "a step must be a mapping of its fields")
    for name in ("owner", "workflow_id", "idempotency_key"):
        if name in step:
            raise ValidationError(name, "is the workflow's, not a step's")
    name = rules.field_check("name", step_name, step.get("name"))
    parents = step.get("depends_on") or []
    if isinstance(parents, str) or not isinstance(parents, Sequence):
        raise ValidationError("depends_on", "must be a list of step names")
    fields = {key: value for key, value in step.items() if key not in _STEP_FIELDS}
    for kind, job_type in HELD_STEPS.items():
        if kind in step:
            if "job_type" in fields or "params" in fields:
                raise ValidationError(kind, f"a {kind} step has no job_type or params of its "
                                            "own: its mapping is its params")  # fmt: skip
            if not isinstance(step[kind], Mapping):
                raise ValidationError(kind, "must be a mapping, e.g. {'signal': 'approved'}")
            fields = {**fields, "job_type": job_type, "params": dict(step[kind])}
    request = JobRequest(**fields, owner=owner, workflow_id=workflow_id)
    # The step's own label is added as it expands: the limit counts it here already.
    rules.field_check("spec.labels", rules.labels, {**request.labels, STEP_LABEL: name})
    spec = request.to_event(now_ms).data.spec
    return WorkflowStep(name=name, depends_on=list(parents), spec=spec)


def expand_workflow(record: WorkflowSubmitted, *, now_ms: int) -> list[tuple[str, JobSubmitted]]:
    """The (step name, JobSubmitted record) of every step, parents first.

    Applies every rule of a workflow to a decoded WorkflowSubmitted, whoever wrote it, and
    raises ValidationError naming the field at fault.
    """
    owner = rules.field_check("owner", rules.owner, record.owner)
    workflow_id = rules.field_check("workflow_id", rules.workflow_id, record.workflow_id)
    key = record.idempotency_key
    if key is not None:
        rules.field_check("idempotency_key", rules.idempotency_key, key)
        expected = idempotent_workflow_id(owner, key)
        if workflow_id != expected:
            raise ValidationError(
                "workflow_id",
                f"must be {expected}, the id of this owner and "
                "idempotency key (jobstream._pipeline.workflows.idempotent_workflow_id)",
            )
    check_schedule(record)
    steps = record.steps
    for i, step in enumerate(steps):
        with _at(f"steps.{i}."):
            rules.field_check("name", step_name, step.name)
    order = topological_order([(step.name, step.depends_on) for step in steps])
    by_name = {step.name: (i, step) for i, step in enumerate(steps)}
    expanded = []
    for name in order:
        i, step = by_name[name]
        with _at(f"steps.{i}."):
            job = _step_job(step, owner, workflow_id, record.submitted_at_ms)
            validate_submitted(job, now_ms=now_ms)
            _check_map(step)
        expanded.append((name, job))
    return expanded


def _check_map(step: WorkflowStep) -> None:
    """A map maps the result of one of its parents."""
    if step.spec.job_type != MAP_TYPE:
        return
    mapped = held_step(step.spec)
    assert isinstance(mapped, Map)
    if mapped.over not in step.depends_on:
        raise ValidationError("spec.params.over", f"{mapped.over!r} must be one of the step's "
                                                  "parents (depends_on)")  # fmt: skip


def _step_job(step: WorkflowStep, owner: str, workflow_id: str,
              submitted_at_ms: int) -> JobSubmitted:  # fmt: skip
    spec = step.spec
    if spec.owner != owner:
        raise ValidationError("spec.owner", f"must be the workflow's owner {owner!r}")
    if spec.depends_on:
        raise ValidationError("spec.depends_on", "must be empty: a step names its parents "
                                                 "in depends_on, beside its spec")  # fmt: skip
    if spec.cron is not None:
        raise ValidationError("spec.cron", "a workflow step runs once: a recurring workflow "
                                           "has a schedule of its own")  # fmt: skip
    parents = [step_job_id(owner, workflow_id, parent) for parent in step.depends_on]
    labels = {**spec.labels, STEP_LABEL: step.name}
    return JobSubmitted(job_id=step_job_id(owner, workflow_id, step.name), idempotency_key=None,
                        workflow_id=workflow_id, submitted_at_ms=submitted_at_ms,
                        spec=evolve(spec, depends_on=parents, labels=labels))  # fmt: skip


def step_ids(event: Event) -> dict[str, str]:
    """Step name -> job id of a WorkflowSubmitted, in submission order."""
    record: WorkflowSubmitted = event.data
    return {step.name: step_job_id(record.owner, record.workflow_id, step.name)
            for step in record.steps}  # fmt: skip
