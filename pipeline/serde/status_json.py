"""The value of a jobs.status record: one job's latest state, as JSON.

jobs.status is a compacted view keyed by job id, read by people (kcat, the
dashboard) as much as by code, so its values are JSON rather than Avro. The shape
is this model; docs/status.md describes it field by field.

Unknown fields are ignored when decoding so that a reader older than the writer
still reads the fields it knows; add fields with defaults, never rename.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from jobstream._pipeline.errors import DeserializationError, SerializationError
from jobstream._pipeline.model.lifecycle import JobState


class LastError(BaseModel):
    """The most recent failure, kept until the job succeeds or is redriven."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    error_type: str = Field(description="Exception class or error code.")
    message: str = Field(description="The error's message.")


class Cancellation(BaseModel):
    """Why a CANCELLED job was cancelled, and by whom."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    by: str | None = Field(
        default=None,
        description="Who asked (cli:<user>@<host>, api:<owner>, a client's name); null when "
        "jobstream cancelled it itself (a parent failed, no future run).",
    )
    reason: str | None = Field(default=None, description="Why, as given.")
    at_ms: int = Field(description="When the job was cancelled (epoch ms).")
    worker_id: str | None = Field(
        default=None, description="The worker that stopped its run; null if none ran."
    )


class Progress(BaseModel):
    """How far the current run has got, as its handler last reported (``ctx.progress``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    fraction: float = Field(ge=0, le=1, description="From 0 (nothing done) to 1 (all done).")
    message: str | None = Field(
        default=None, description="What the handler is doing, at most 200 characters."
    )
    at_ms: int = Field(description="When the handler reported it (epoch ms, the worker's clock).")


class JobStatus(BaseModel):
    """One job's latest state: the value of its record on jobs.status."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str = Field(description="Unique, time-sortable job id (also the record key).")
    workflow_id: str | None = Field(default=None, description="DAG this job belongs to.")
    job_type: str = Field(description="Handler name, e.g. 'report.generate'.")
    owner: str = Field(description="Application, user or tenant that owns the job.")
    state: JobState = Field(description="Where the job is in its life.")
    attempt: int = Field(default=0, ge=0, description="Current or last attempt; 0 before any.")
    epoch: int = Field(default=0, ge=0, description="Fencing token of the current execution.")
    priority: Literal["HIGH", "NORMAL", "LOW"] = Field(
        default="NORMAL", description="Execution tier."
    )
    scheduled_at_ms: int | None = Field(
        default=None, description="Due: when the current or next attempt is due (epoch ms)."
    )
    next_fire_at_ms: int | None = Field(
        default=None, description="Recurring jobs: when the next run is due (epoch ms)."
    )
    updated_at_ms: int = Field(description="When this status was written (epoch ms).")
    last_error: LastError | None = Field(default=None, description="The most recent failure.")
    result: str | None = Field(default=None, description="Small result inline, as JSON text.")
    result_uri: str | None = Field(default=None, description="Where a large result is stored.")
    runs: int = Field(default=0, ge=0, description="Recurring jobs: completed runs so far.")
    duplicates: int = Field(
        default=0, ge=0, description="Submissions dropped as duplicates of this job."
    )
    step: str | None = Field(default=None, description="Its step name, in a workflow.")
    waiting_for: list[str] = Field(
        default_factory=list,
        description="BLOCKED: the parents (job ids) it still waits for; WAITING: the signal; "
        "held on a key (held_by): the jobs it waits behind.",
    )
    created_at_ms: int | None = Field(
        default=None, description="When the job was submitted (epoch ms); null if not known."
    )
    labels: dict[str, str] | None = Field(
        default=None, description="The job's labels; null if not known."
    )
    params: str | None = Field(
        default=None,
        description="The parameters as JSON object text, when at most 4 KB; else null.",
    )
    params_bytes: int | None = Field(
        default=None, ge=0, description="The size of the parameters' JSON text."
    )
    params_sha256: str | None = Field(
        default=None, description="The SHA-256 (hex) of the parameters' JSON text."
    )
    throttled_ms: int | None = Field(
        default=None,
        ge=0,
        description="How long rate limits held the current execution back after it was due "
        "(part of its lateness); null when none did.",
    )
    params_uri: str | None = Field(
        default=None,
        description="Parameters over 4 KB: where the HTTP API serves them whole (a path on "
        "its address); null when they are inline.",
    )
    cancellation: Cancellation | None = Field(
        default=None, description="CANCELLED: who asked and why; null otherwise."
    )
    progress: Progress | None = Field(
        default=None,
        description="The current run's latest progress report; kept when the run ends, "
        "null from the next firing or start, and for a run that reported none.",
    )
    pool: str | None = Field(
        default=None, description="The worker pool it requires; null: any worker of its type."
    )
    deadline_ms: int | None = Field(
        default=None,
        description="The whole job's deadline (epoch ms): no attempt starts at or past it, "
        "and the job ends EXPIRED; null: none.",
    )
    queue_limit_ms: int | None = Field(
        default=None,
        ge=0,
        description="The longest an attempt may stay QUEUED before a worker starts it: past "
        "it the job ends EXPIRED; null: no limit.",
    )
    keys: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="Its concurrency, rate, debounce and singleton keys, each as an object "
        "(docs/keys.md); null: none.",
    )
    held_by: str | None = Field(
        default=None,
        description="The key it waits on, '<kind>:<key>' (concurrency:customer-42, "
        "rate:crm, singleton:nightly), "
        "waiting_for naming the jobs it waits behind; null when no key holds it.",
    )
    joined_job_id: str | None = Field(
        default=None,
        description="COLLAPSED: the job it runs as (a debounce window's run, the singleton "
        "key's job it was dropped for or replaced by).",
    )
    submitted_by: str | None = Field(
        default=None,
        description="Who submitted it: api:<owner> or api:admin:<name> (an admin for an "
        "owner) over HTTP, kafka:User:<principal> from a Kafka client; null if not known.",
    )


def encode_status(status: JobStatus) -> bytes:
    """JSON bytes for a jobs.status value; fields left at None are written as null."""
    try:
        return orjson.dumps(status.model_dump(mode="json"))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise SerializationError(f"cannot encode JobStatus {status.job_id}: {exc}") from exc


def decode_status(raw: bytes) -> JobStatus:
    """Parse a jobs.status value; DeserializationError (with ``raw``) if it is not one.

    A tombstone (None) is not a status: callers of a compacted topic check for it first.
    """
    if not raw:
        raise DeserializationError("empty value", raw=raw)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DeserializationError(f"invalid JSON: {exc}", raw=raw) from exc
    if not isinstance(obj, dict):
        raise DeserializationError(
            f"job status must be a JSON object, not {type(obj).__name__}", raw=raw
        )
    try:
        return JobStatus.model_validate(obj)
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise DeserializationError(f"not a job status: {problems}", raw=raw) from exc
