"""A child a handler spawns (``ctx.spawn``), as the JobSubmitted the worker puts on jobs.intake.

The child is a job of the spawner's workflow and owner, checked by the rules of every
submission (:class:`~jobstream._pipeline.model.job.JobRequest`, then
:func:`~jobstream._pipeline.model.job.validate_submitted` on the record itself, as the timers
will check it), so a bad child raises ValidationError in the handler, naming its field.
Its job id, step name and labels are the contract of pipeline/workflows/members.py: the id
derives from the workflow, the spawner's step (its job id, for a job of a workflow
submitted without one) and the key, the labels name the spawner (``jobstream.spawned_by``)
and the child's step (``jobstream.step``), and it depends on nothing.

``ctx.spawn`` loads this module at its first call, not with the context: it brings
pydantic and the job model (some 0.15 s), which a handler's child process that never
spawns does not pay (pipeline/worker/child.py).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest, validate_submitted
from jobstream._pipeline.model.labels import STEP_LABEL
from jobstream._pipeline.model.records import JobSubmitted, evolve
from jobstream._pipeline.workflows.members import (
    MAX_SPAWN_KEY_CHARS,
    SPAWNED_BY_LABEL,
    spawned_job_id,
    spawned_step,
)

RESERVED_LABELS = (SPAWNED_BY_LABEL, STEP_LABEL)
"""Labels the worker sets on a child, which a handler may not give."""


def spawn_key(value: object) -> str:
    """A spawn's explicit key as text: a non-blank string of at most
    :data:`MAX_SPAWN_KEY_CHARS` without control characters, or an int (its decimal text,
    as the ordinal of a spawn without a key). ValidationError naming ``key``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if not isinstance(value, str):
        raise ValidationError("key", f"expected a string or an int, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError("key", "must not be blank")
    if len(value) > MAX_SPAWN_KEY_CHARS:
        raise ValidationError("key", f"is {len(value)} characters, more than "
                                     f"{MAX_SPAWN_KEY_CHARS}")  # fmt: skip
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ValidationError("key", "must not contain control characters")
    return value


def spawned_record(*, spawner_id: str, owner: str, workflow_id: str, holder_step: str,
                   key: str, job_type: str, now_ms: int,
                   fields: Mapping[str, Any]) -> JobSubmitted:  # fmt: skip
    """The JobSubmitted of child ``key`` of job ``spawner_id`` (step ``holder_step`` of
    ``owner``'s workflow ``workflow_id``), spawned at ``now_ms``; ``fields`` are the
    JobRequest fields the handler gave (``params``, ``priority``, ``run_at``,
    ``timeout_ms``, ``retry``, ``labels``, ``pool``), those it left None out."""
    given = {name: value for name, value in fields.items() if value is not None}
    labels = given.get("labels", {})
    if isinstance(labels, Mapping):
        for name in RESERVED_LABELS:
            if name in labels:
                raise ValidationError(
                    "spec.labels", f"{name} is set by the worker on a spawned child, not by "
                    "its handler")  # fmt: skip
        given["labels"] = {**labels, SPAWNED_BY_LABEL: spawner_id,
                           STEP_LABEL: spawned_step(holder_step, key)}  # fmt: skip
    request = JobRequest(job_type=job_type, owner=owner, workflow_id=workflow_id, **given)
    record: JobSubmitted = request.to_event(now_ms).data
    record = evolve(record, job_id=spawned_job_id(owner, workflow_id, holder_step, key))
    validate_submitted(record, now_ms=now_ms)
    return record
