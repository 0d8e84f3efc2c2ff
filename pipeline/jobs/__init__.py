"""Submitting jobs: the request model and its rules, the Avro events, the Python client.

The CLI commands are in :mod:`pipeline.jobs.cli` (imported by the root CLI, not here).
"""

from pipeline.jobs.client import JobClient, SubmissionError
from pipeline.jobs.commands import (
    cancel_event,
    pause_event,
    resume_event,
    update_schedule_event,
    validate_command,
)
from pipeline.jobs.keys import idempotent_job_id, is_job_id, partition_key
from pipeline.jobs.model import JobRequest, RetryPolicy, validate_submitted

__all__ = [
    "JobClient",
    "JobRequest",
    "RetryPolicy",
    "SubmissionError",
    "cancel_event",
    "idempotent_job_id",
    "is_job_id",
    "partition_key",
    "pause_event",
    "resume_event",
    "update_schedule_event",
    "validate_command",
    "validate_submitted",
]
