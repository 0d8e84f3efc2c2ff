"""A job's parameters as the status records carry them: inline when small, else by digest.

Parameters may reach 1 MB, and jobs.status is written several times in a job's life and
read by console consumers: there they travel inline only up to
:data:`STATUS_PARAMS_INLINE_BYTES`, and always with their size and SHA-256 digest, so a
reader can tell two jobs' parameters apart and check a copy it holds. Larger ones travel
with a URI instead, :data:`PARAMS_URI`: the HTTP API serves them whole from there (it reads
them from the job's JobSubmitted on jobs.intake, where they stay, as in every
ExecutionRequested).
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple, TypedDict

from jobstream._pipeline.model.records import JobKeys, JobSubmitted

STATUS_PARAMS_INLINE_BYTES = 4 * 1024
"""Largest parameters (bytes of JSON text) written inline in a jobs.status record."""
PARAMS_URI = "/api/v1/jobs/{job_id}/params"
"""Where the HTTP API serves a job's parameters whole (a path on the API's address)."""


class ParamsSummary(NamedTuple):
    params: str | None
    """The JSON text when at most the inline limit; None when larger."""
    params_bytes: int
    params_sha256: str


def params_digest(params: bytes) -> str:
    return hashlib.sha256(params).hexdigest()


def summarize_params(text: str | None, *, inline_bytes: int = STATUS_PARAMS_INLINE_BYTES
                     ) -> ParamsSummary:  # fmt: skip
    """Size, digest and (small ones only) the text of a spec's ``params``."""
    raw = (text or "{}").encode()
    inline = raw.decode() if len(raw) <= inline_bytes else None
    return ParamsSummary(inline, len(raw), params_digest(raw))


def params_uri(job_id: str, inline: str | None) -> str | None:
    """The URI of parameters a status record does not carry inline; None when it does."""
    return None if inline is not None else PARAMS_URI.format(job_id=job_id)


class SubmissionFields(TypedDict):
    """JobLifecycle's fields that tell what a submission was."""

    created_at_ms: int
    labels: dict[str, str]
    params: str | None
    params_bytes: int
    params_sha256: str
    deadline_ms: int | None
    queue_limit_ms: int | None
    pool: str | None
    job_keys: JobKeys | None
    submitted_by: str | None


def submission_fields(job: JobSubmitted) -> SubmissionFields:
    """What the first lifecycle event of a JobSubmitted tells the status processor:
    creation time, labels and the parameters' summary (JobLifecycle's optional fields;
    labels always travel with the summary), its time limits, pool and keys."""
    spec = job.spec
    summary = summarize_params(spec.params)
    return SubmissionFields(created_at_ms=job.submitted_at_ms, labels=dict(spec.labels),
                            params=summary.params, params_bytes=summary.params_bytes,
                            params_sha256=summary.params_sha256, deadline_ms=spec.deadline_ms,
                            queue_limit_ms=spec.queue_limit_ms, pool=spec.pool,
                            job_keys=spec.job_keys, submitted_by=job.submitted_by)  # fmt: skip
