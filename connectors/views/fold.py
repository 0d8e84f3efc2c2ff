"""How each record changes a view document: pure functions, old document in, new one out.

A job's document merges three sources that reach the view in no fixed order:

* its **submission** (JobSubmitted on jobs.intake): owner, type, labels, parameters'
  size and digest, the schedule, the retry policy, timeout, deadline and queue limit (a
  backfill copies the first two),
  ``created_at_ms`` and, in a workflow, its parents
  (``depends_on``) and step name (``step``); the first submission wins (a
  resubmission with the same idempotency key is the same job);
* its **status** (jobs.status): every field of :class:`JobStatus` (docs/status.md), the
  parameters aside (:data:`KEPT_BESIDE`), those the submission owns only while no
  submission has been read; a status older than the one held (``updated_at_ms``) changes
  nothing;
* its **events** (jobs.events): each execution's history, kept in separate records, and
  the commands people gave it (an event with ``requested_by``: who asked, and why), kept in
  one record of their own beside the document, which they would otherwise rewrite.

A job known only from its submission is in the state ``SUBMITTED``: accepted, not yet
seen by the timers. Merging commutes, so a replay from offset zero, which reads the
topics' partitions in another interleaving, folds into the same documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import orjson

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.keys import shown
from jobstream._pipeline.model.lifecycle import TERMINAL_STATES, LifecycleKind
from jobstream._pipeline.model.params import params_digest
from jobstream._pipeline.model.records import (
    JobLifecycle,
    JobSubmitted,
    ScheduleChanged,
    WorkflowSubmitted,
    plain,
)
from jobstream._pipeline.scheduling.ids import job_id_time_ms
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.workflows.commands import STEP_LABEL

SUBMITTED = "SUBMITTED"
"""The view's state of a job whose submission it has read and whose status it has not."""
PARAMS_INLINE_BYTES = 64 * 1024
"""Parameters up to this size are kept in the view; larger ones by size and digest only."""
COMMANDS_KEPT = 100
"""A job's latest commands kept (a recurring job triggered by a script could take many)."""

KEPT_BESIDE = frozenset({"params", "params_uri"})
"""jobs.status fields a document does not hold: the parameters are kept beside it (key
``p``, read on GET of one job), and where they are served is for the API to say."""
_IDENTITY = ("job_id", "job_type", "owner", "workflow_id")
"""jobs.status fields that name the job: set when its document is made (a workflow id,
which a status may lack, is kept once known)."""
_SUBMISSION_FIELDS = ("created_at_ms", "labels", "params_bytes", "params_sha256", "step",
                      "pool", "deadline_ms", "queue_limit_ms")  # fmt: skip
"""jobs.status fields the submission owns: a status fills them only in a document no
submission has filled."""
_STATUS_FIELDS = tuple(
    name for name in JobStatus.model_fields
    if name not in KEPT_BESIDE and name not in _IDENTITY and name not in _SUBMISSION_FIELDS
)  # fmt: skip
"""What every newer status sets: every other field of jobs.status, so a field added to
JobStatus reaches the view (and the API's job) with no edit here."""
_STATUS_DEFAULTS = {
    name: field.get_default(call_default_factory=True)
    for name, field in JobStatus.model_fields.items()
    if not field.is_required() and name not in KEPT_BESIDE
}
_VIEW_DEFAULTS: dict[str, Any] = {
    "state": SUBMITTED, "updated_at_ms": None, "labels": {}, "ended_at_ms": None,
    "idempotency_key": None, "schedule": None, "submitted": False, "depends_on": [],
    "pool": None, "retry": None, "timeout_ms": None,
}  # fmt: skip
"""The view's own keys (what the submission and the events add to jobs.status's fields),
and where its defaults differ from JobStatus's: SUBMITTED before any status, no write time
until then, labels always a mapping."""
_DEFAULTS = {**_STATUS_DEFAULTS, **_VIEW_DEFAULTS}
_NEXT_ATTEMPT = frozenset({LifecycleKind.RETRY_SCHEDULED})
"""Events that name the failed execution but carry the attempt that comes next."""
_OUTCOMES = {
    LifecycleKind.SUCCEEDED: "SUCCEEDED",
    LifecycleKind.FAILED: "FAILED",
    LifecycleKind.TIMED_OUT: "TIMED_OUT",
    LifecycleKind.LOST: "LOST",
    LifecycleKind.CANCELLED: "CANCELLED",
}
"""The ends of an execution; a CANCELLED names one when a worker stopped it (the timers'
CANCELLED of a job not fired names none, and changes no execution). An EXPIRED ends an
execution no worker started (the status processor's); the retry router's names the failed
one, which keeps its outcome."""


def new_doc(job_id: str, owner: str, job_type: str, created_at_ms: int) -> dict[str, Any]:
    """A job's first document: every jobs.status field but :data:`KEPT_BESIDE` at its
    default, and the view's own keys."""
    doc = {name: value.copy() if isinstance(value, list | dict) else value  # none shared
           for name, value in _DEFAULTS.items()}  # fmt: skip
    doc.update(job_id=job_id, owner=owner, job_type=job_type, created_at_ms=created_at_ms)
    return doc


def created_ms(job_id: str, fallback_ms: int) -> int:
    """A ULID's instant; an idempotent id carries none, so the first instant seen."""
    try:
        return job_id_time_ms(job_id)
    except ValidationError:
        return fallback_ms


def apply_submitted(doc: dict[str, Any] | None, record: JobSubmitted) -> dict[str, Any]:
    """The document after the job's JobSubmitted ``record``; the first one wins."""
    spec = record.spec
    job_id, submitted = record.job_id, record.submitted_at_ms
    if doc is None:
        doc = new_doc(job_id, spec.owner, spec.job_type, submitted)
    elif doc["submitted"]:
        return doc
    params = (spec.params or "{}").encode()
    labels = dict(spec.labels or {})
    return {
        **doc,
        "owner": spec.owner, "job_type": spec.job_type, "created_at_ms": submitted,
        "workflow_id": record.workflow_id, "labels": labels,
        "priority": doc["priority"] if doc["updated_at_ms"] else str(spec.priority),
        "idempotency_key": record.idempotency_key,
        "schedule": {"run_at_ms": spec.run_at_ms,
                     "cron": None if spec.cron is None else plain(spec.cron)},
        "params_bytes": len(params), "params_sha256": params_digest(params),
        "submitted_by": record.submitted_by,
        "submitted": True, "depends_on": list(spec.depends_on or []),
        "step": labels.get(STEP_LABEL), "pool": spec.pool,
        "retry": None if spec.retry is None else plain(spec.retry), "timeout_ms": spec.timeout_ms,
        "deadline_ms": spec.deadline_ms, "queue_limit_ms": spec.queue_limit_ms,
        "keys": shown(spec.job_keys) or None,
    }  # fmt: skip


def params_value(record: JobSubmitted) -> bytes | None:
    """The parameters to keep beside the document, or None when they are too large."""
    params = (record.spec.params or "{}").encode()
    return params if len(params) <= PARAMS_INLINE_BYTES else None


def apply_status(doc: dict[str, Any] | None, status: JobStatus) -> dict[str, Any]:
    """The document after a jobs.status record; an older status than the one held is
    ignored (a replay meets the same records again)."""
    if doc is None:
        doc = new_doc(status.job_id, status.owner, status.job_type,
                      created_ms(status.job_id, status.updated_at_ms))  # fmt: skip
    elif doc["updated_at_ms"] is not None and status.updated_at_ms < doc["updated_at_ms"]:
        return doc
    values = status.model_dump(mode="json")
    ended = status.state in TERMINAL_STATES
    return {
        **doc,
        **{name: values[name] for name in _STATUS_FIELDS},
        **({} if doc["submitted"] else _submission_of(status)),
        "workflow_id": status.workflow_id or doc["workflow_id"],
        "ended_at_ms": (doc["ended_at_ms"] or status.updated_at_ms) if ended else None,
    }


def _submission_of(status: JobStatus) -> dict[str, Any]:
    """What a status tells of the submission, for a job whose JobSubmitted the view has
    not read (jobs.intake's retention is shorter than jobs.status's)."""
    return {name: getattr(status, name) for name in _SUBMISSION_FIELDS
            if getattr(status, name) is not None}  # fmt: skip


def status_params(doc: Mapping[str, Any], status: JobStatus) -> bytes | None:
    """The parameters a status carries, to keep beside a document no submission filled."""
    if doc["submitted"] or status.params is None:
        return None
    return status.params.encode()


def apply_event(
    execution: dict[str, Any] | None, event: JobLifecycle
) -> dict[str, Any] | None:
    """The execution record after a JobLifecycle ``event``; None for an event that names
    no execution (RETRY_SCHEDULED of a redrive, CANCELLED, PAUSED, ...).

    ``started_at_ms`` is when the run's handler began: STARTED's instant (its claim, or for
    a run claimed ahead its due instant) until a HEARTBEAT or the run's end tells the
    launch (``launched_at_ms``), which replaces it."""
    execution_id = event.execution_id
    if not execution_id:
        return None
    kind = event.kind
    at = event.at_ms
    run = dict(execution or {
        "execution_id": execution_id, "attempt": event.attempt or 0,
        "epoch": event.epoch or 0, "scheduled_at_ms": None, "fired_at_ms": None,
        "lateness_ms": None, "worker_id": None, "started_at_ms": None,
        "last_heartbeat_ms": None, "ended_at_ms": None, "outcome": "QUEUED", "error": None,
        "result": None, "result_uri": None, "detail": None, "starts": 0, "duplicates": 0,
        "log_lines": None,
    })  # fmt: skip
    if event.attempt and kind not in _NEXT_ATTEMPT:
        run["attempt"] = event.attempt
    if kind == LifecycleKind.FIRED:
        run.update(fired_at_ms=at, scheduled_at_ms=event.scheduled_at_ms,
                   lateness_ms=event.lateness_ms)  # fmt: skip
    elif kind == LifecycleKind.STARTED:
        run.update(worker_id=event.worker_id, started_at_ms=at, starts=run["starts"] + 1,
                   last_heartbeat_ms=at)  # fmt: skip
        if run["ended_at_ms"] is None:
            run["outcome"] = "RUNNING"
    elif kind == LifecycleKind.HEARTBEAT:
        run["last_heartbeat_ms"] = max(at, run["last_heartbeat_ms"] or 0)
    elif kind in _OUTCOMES or (kind == LifecycleKind.EXPIRED and run["ended_at_ms"] is None):
        error = event.error
        run.update(ended_at_ms=at, outcome=_OUTCOMES.get(LifecycleKind(kind), str(kind)),
                   result=event.result, result_uri=event.result_uri,
                   worker_id=event.worker_id or run["worker_id"],
                   detail=event.detail or run["detail"], log_lines=event.log_lines)  # fmt: skip
        if error is not None:
            run["error"] = {"error_type": error.error_type, "message": error.message,
                            "traceback": error.traceback, "retryable": error.retryable}  # fmt: skip
    elif kind == LifecycleKind.DUPLICATE:
        run["duplicates"] += 1
    elif event.detail:
        run["detail"] = event.detail
    if event.launched_at_ms is not None:  # when its handler really began: after STARTED
        run["started_at_ms"] = event.launched_at_ms
    return run


def command_of(event: JobLifecycle) -> dict[str, Any] | None:
    """The command a JobLifecycle ``event`` records: its kind, instant, who asked
    (``requested_by``) and why (its ``detail``); None when no person's command caused it."""
    by = event.requested_by
    if by is None:
        return None
    return {"kind": str(event.kind), "at_ms": event.at_ms, "by": by,
            "reason": event.detail}  # fmt: skip


def _command_order(command: Mapping[str, Any]) -> tuple[int, str, str, str]:
    return (command["at_ms"], command["kind"], command["by"], command["reason"] or "")


def apply_command(
    commands: list[dict[str, Any]] | None, event: JobLifecycle
) -> list[dict[str, Any]] | None:
    """A job's commands after a JobLifecycle ``event``, by instant; None when it changes
    nothing (no person's command caused it, they hold it already, or it is older than the
    :data:`COMMANDS_KEPT` held).

    The commands held are always the latest :data:`COMMANDS_KEPT` of every one folded,
    ordered by a total order on all their fields, so events folded in any order or twice
    (a replay) leave the same list; two events alike in all four fields are one command.
    """
    command = command_of(event)
    if command is None:
        return None
    held = list(commands or [])
    if command in held:
        return None
    merged = sorted([*held, command], key=_command_order)[-COMMANDS_KEPT:]
    return None if merged == held else merged


def workflow_schedule(record: WorkflowSubmitted) -> dict[str, Any]:
    """What the views keep of a recurring workflow's WorkflowSubmitted (its template, whose
    steps are no jobs): its schedule, owner, steps' names and types, and when it was
    submitted; ``cancelled_at_ms`` is set by its cancel (connectors/views/schedules.py)."""
    assert record.schedule is not None  # a template: a recurring workflow
    return {
        "workflow_id": record.workflow_id, "owner": record.owner,
        "cron": plain(record.schedule), "created_at_ms": record.submitted_at_ms,
        "steps": [{"name": step.name, "job_type": step.spec.job_type}
                  for step in record.steps or []],
        "cancelled_at_ms": None,
    }  # fmt: skip


def workflow_updated(held: dict[str, Any], record: ScheduleChanged) -> dict[str, Any]:
    """A recurring workflow's schedule after an UPDATE of its cron and/or steps."""
    changed = dict(held)
    if record.cron is not None:
        changed["cron"] = plain(record.cron)
    if record.steps is not None:
        changed["steps"] = [{"name": step.name, "job_type": step.spec.job_type}
                            for step in record.steps]  # fmt: skip
    return changed


def dumps(value: object) -> bytes:
    """JSON of a view's value; a record in it (a worker's heartbeat) as an object of its
    fields, enums as their symbols."""
    return orjson.dumps(value, default=msgspec.to_builtins)


def loads(raw: bytes) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(raw)
    return value


def loads_list(raw: bytes) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = orjson.loads(raw)
    return value
