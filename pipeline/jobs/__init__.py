"""Submitting jobs: the Python client (the request model and its rules are in pipeline/model/).

A request's ``retry`` is the retry router's own
:class:`jobstream._pipeline.model.retry.RetryPolicy`,
exported here beside :class:`JobRequest`.

The CLI commands are in :mod:`jobstream._pipeline.jobs.cli` (imported by the root CLI, not here).
"""

from jobstream._pipeline.jobs.client import JobClient, SubmissionError
from jobstream._pipeline.model.commands import (
    cancel_event,
    pause_event,
    resume_event,
    trigger_event,
    update_schedule_event,
    validate_command,
)
from jobstream._pipeline.model.idempotency import idempotent_job_id, is_job_id
from jobstream._pipeline.model.job import JobRequest, validate_submitted
from jobstream._pipeline.model.retry import RetryPolicy

__all__ = [
    "JobClient",
    "JobRequest",
    "RetryPolicy",
    "SubmissionError",
    "cancel_event",
    "idempotent_job_id",
    "is_job_id",
    "pause_event",
    "resume_event",
    "trigger_event",
    "update_schedule_event",
    "validate_command",
    "validate_submitted",
]
