"""A backfill's jobs: one one-off job per past occurrence of a recurring job.

Each occurrence (:func:`jobstream._pipeline.scheduling.backfill.backfill_occurrences`) becomes a
one-off job with the recurring job's type, owner, parameters, priority, retry policy,
timeout, pool and labels, plus two labels that name what it stands for
(:data:`OF_LABEL`, :data:`OCCURRENCE_LABEL`). Its idempotency key is
:func:`backfill_key` of (job id, occurrence), so its job id is fixed by them
(:func:`jobstream._pipeline.model.idempotency.idempotent_job_id`): the same backfill sent twice, or
two
overlapping ranges, submit each occurrence under one id, and the timers drop the repeat as
a duplicate. The job is not part of the recurring job's workflow (it waits for nothing and
nothing waits for it), and it does not count as a run of the schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobstream._pipeline.clock import instant_of, iso_ms
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.workflows.commands import STEP_LABEL

OF_LABEL = "backfill.of"
"""The label naming the recurring job a backfilled occurrence belongs to."""
OCCURRENCE_LABEL = "backfill.occurrence"
"""The label naming the occurrence's nominal instant, ISO 8601 in UTC."""

def backfill_key(job_id: str, occurrence_ms: int) -> str:
    """The idempotency key of the occurrence at ``occurrence_ms`` of job ``job_id``."""
    return f"backfill:{job_id}:{occurrence_ms}"


def occurrence_job_id(owner: str, job_id: str, occurrence_ms: int) -> str:
    """The job id the occurrence runs under, whoever submits it and however often."""
    return idempotent_job_id(owner, backfill_key(job_id, occurrence_ms))


def instant_text(ms: int) -> str:
    """``2026-03-01T05:00:00Z``: an occurrence as its label and the CLI show it."""
    return iso_ms(ms)


@dataclass(frozen=True, kw_only=True)
class BackfillSource:
    """What a backfill copies from the recurring job (its submission's spec)."""

    job_id: str
    """The recurring job's id."""
    job_type: str
    owner: str
    params: str | Mapping[str, Any] = "{}"
    """JSON text as submitted, or the mapping."""
    priority: str = "NORMAL"
    retry: Mapping[str, Any] | None = None
    """The RetryPolicy record; None takes the job type's default."""
    timeout_ms: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    pool: str | None = None


def occurrence_request(source: BackfillSource, occurrence_ms: int, *,
                       run_at_ms: int) -> JobRequest:  # fmt: skip
    """The one-off job that runs ``source``'s occurrence at ``occurrence_ms``, due at
    ``run_at_ms``; ValidationError naming the field when the copy breaks a rule (a job
    with as many labels as allowed has no room for the two a backfill adds)."""
    labels = {name: value for name, value in source.labels.items() if name != STEP_LABEL}
    labels[OF_LABEL] = source.job_id
    labels[OCCURRENCE_LABEL] = instant_text(occurrence_ms)
    # As stored (JSON text, the Priority and RetryPolicy records): JobRequest parses them.
    fields: dict[str, Any] = {
        "job_type": source.job_type,
        "owner": source.owner,
        "params": source.params,
        "priority": source.priority,
        "run_at": instant_of(run_at_ms),
        "retry": None if source.retry is None else dict(source.retry),
        "timeout_ms": source.timeout_ms,
        "idempotency_key": backfill_key(source.job_id, occurrence_ms),
        "labels": labels,
        "pool": source.pool,
    }
    return JobRequest(**fields)
