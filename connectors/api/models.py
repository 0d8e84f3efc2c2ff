"""The HTTP API's request and response bodies (what /openapi.json describes).

A submission's body is loosely typed on purpose: the rules live in
:class:`jobstream._pipeline.model.job.JobRequest`, whose errors name the record path
(``spec.cron.timezone``), so an HTTP client sees the same field names as a CLI user and a
dead-letter reader.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.dataclasses import dataclass as pydantic_dataclass

from jobstream._pipeline.dlq.reader import DlqFilter
from jobstream._pipeline.model import rules
from jobstream._pipeline.serde import JobStatus


class JobIn(BaseModel):
    """A job to submit; the fields of :class:`jobstream._pipeline.model.job.JobRequest`."""

    model_config = ConfigDict(extra="forbid")

    job_type: str = Field(description="Handler name, e.g. 'report.generate'.")
    owner: str | None = Field(
        None, description="Owner; defaults to the token's. Only an admin token names another."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="A JSON object, <= 1 MB.")
    priority: str = Field("NORMAL", description="HIGH, NORMAL or LOW.")
    pool: str | None = Field(
        None, description="The worker pool it must run in, e.g. 'gpu' (workers started with "
        "--pool gpu): a-z, 0-9, _ and -, from a letter or digit, at most 50 characters; "
        "null: any worker of the type."
    )
    run_at: str | None = Field(None, description="ISO 8601 instant with a zone; null: now.")
    cron: str | dict[str, Any] | None = Field(
        None, description="A cron expression (UTC) or a CronSchedule object."
    )
    depends_on: list[str] = Field(default_factory=list, description="Job ids to succeed first.")
    retry: dict[str, Any] | None = Field(None, description="A RetryPolicy object.")
    timeout_ms: int | None = Field(None, description="Per-attempt timeout.")
    deadline: str | None = Field(
        None, description="The whole job's deadline, across attempts: an ISO 8601 instant with "
        "a zone (2026-12-01T09:00Z) or an ISO 8601 duration from the submission (PT30M). No "
        "attempt starts at or past it: the job ends EXPIRED. One-off jobs only."
    )  # fmt: skip
    queue_limit_ms: int | None = Field(
        None, description="The longest one attempt may stay QUEUED before a worker starts it: "
        "past it the job ends EXPIRED. One-off jobs only."
    )  # fmt: skip
    idempotency_key: str | None = Field(
        None, description="Same owner and key, same job; the Idempotency-Key header also sets it."
    )
    workflow_id: str | None = Field(
        None, description="Words of A-Z, a-z, 0-9, _ and - joined by dots, at most "
        f"{rules.MAX_WORKFLOW_ID_CHARS} characters."
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description=f"At most {rules.MAX_LABELS}; a name (no '=') of at "
        f"most {rules.MAX_LABEL_NAME_CHARS} characters, a value of at most "
        f"{rules.MAX_LABEL_VALUE_CHARS}; no control characters."
    )
    keys: dict[str, Any] | None = Field(
        None, description="Concurrency, rate, debounce and singleton keys (docs/keys.md): "
        '{"concurrency": {"key": "customer-{params.customer_id}", "limit": 2}, "rate": '
        '{"key": "crm", "rate": "100/min"}, "debounce": {"key": ..., "window_ms": 5000, '
        '"max_delay_ms": null, "keep": "LAST"}, "singleton": {"key": ..., "mode": "DROP"}}; a '
        "key's {params...} and {labels...} paths are filled from the job."
    )


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Documented as JobIn objects but parsed as plain objects: the handler checks each one
    # once, with JobRequest's rules (pydantic validating a thousand JobIns first, then the
    # JobRequests again, cost the API a quarter of its CPU per batch).
    jobs: Annotated[list[dict[str, Any]], WithJsonSchema({
        "type": "array", "items": {"$ref": "#/components/schemas/JobIn"},
        "description": "Every job is checked before any is sent.",
    })]  # fmt: skip


class Accepted(BaseModel):
    job_id: str
    state: str = Field(description="SUBMITTED for a new job; the job's state when it existed.")
    created: bool = Field(description="False when the idempotency key named a known job.")


class BatchAccepted(BaseModel):
    job_ids: list[str]


class Schedule(BaseModel):
    run_at_ms: int | None = Field(None, description="Requested: the run time the submission "
                                  "asked for (epoch ms); null: now. When it is due is the "
                                  "job's scheduled_at_ms.")
    cron: dict[str, Any] | None = None


class JobCommandOut(BaseModel):
    """A command a person gave the job, as jobs.events records it."""

    kind: str = Field(description="The event it caused: CANCELLED, PAUSED, RESUMED, SCHEDULED "
                      "(an update, or a one-off job's trigger), FIRED (a recurring job's "
                      "trigger) or RETRY_SCHEDULED (a redrive).")
    at_ms: int
    by: str = Field(description="Who asked: api:<owner>, api:admin:<token name>, cli:<user>, "
                    "or the actor a Kafka client named.")
    reason: str | None = Field(None, description="The reason given, or what the command did.")


class JobOut(JobStatus):
    """A job as the views hold it: the value of its jobs.status record (every field of
    :class:`JobStatus`, with its description) merged with its submission, and the API's own
    fields.

    Derived rather than restated so that a field added to jobs.status is in the API's job,
    and in /openapi.json, without a second edit (tests/connectors/api/test_job_shape.py).
    A few fields are retyped for what the views know that a status may not: ``state`` is
    SUBMITTED before the first status and ``updated_at_ms`` null until then,
    ``created_at_ms`` and ``labels`` are always known, and ``params`` is an object.
    """

    state: str = Field(  # type: ignore[assignment]
        description="A jobs.status state, or SUBMITTED before the first."
    )
    updated_at_ms: int | None = Field(  # type: ignore[assignment]
        None, description="When its latest status was written (epoch ms); null while SUBMITTED."
    )
    created_at_ms: int = Field(description="When the job was submitted (epoch ms).")
    labels: dict[str, str] = Field(default_factory=dict, description="The job's labels.")
    params: dict[str, Any] | None = Field(  # type: ignore[assignment]
        None, description="Only on GET of one job, and only when at most 64 KB."
    )
    params_uri: str | None = Field(
        None, description="On GET of one job whose parameters are not inline: where they are "
        "served whole (GET /api/v1/jobs/{id}/params).",
    )
    depends_on: list[str] = Field(default_factory=list, description="Its parents' job ids.")
    ended_at_ms: int | None = Field(
        None, description="When it reached SUCCEEDED, DEAD_LETTERED, CANCELLED or EXPIRED "
        "(epoch ms); null while it has not."
    )  # fmt: skip
    idempotency_key: str | None = None
    schedule: Schedule | None = None
    retry: dict[str, Any] | None = Field(
        None, description="Its RetryPolicy as submitted; null: the job type's default."
    )
    timeout_ms: int | None = Field(None, description="Its per-attempt timeout as submitted.")
    waiting_for_pool: bool = Field(
        False, description="QUEUED for a pool that no live worker serves (jobs.workers)."
    )
    commands: list[JobCommandOut] | None = Field(
        None, description="Only on GET of one job: the commands people gave it (cancel, "
        "trigger, pause, resume, update, redrive), oldest first, the latest 100.",
    )


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page; null: done.")


class ErrorOut(BaseModel):
    error_type: str | None = None
    message: str | None = None
    traceback: str | None = None
    retryable: bool | None = None


class ExecutionOut(BaseModel):
    execution_id: str
    attempt: int
    epoch: int
    outcome: str = Field(
        description="QUEUED, RUNNING, SUCCEEDED, FAILED, TIMED_OUT, LOST or CANCELLED."
    )
    scheduled_at_ms: int | None = Field(None, description="Due: when this run was due (epoch ms).")
    fired_at_ms: int | None = Field(None, description="Fired: when the timers handed this run to "
                                    "the workers (epoch ms).")
    lateness_ms: int | None = None
    worker_id: str | None = None
    started_at_ms: int | None = Field(
        None, description="Started: when this run's handler began (epoch ms, its worker's "
        "clock), as its HEARTBEATs and its end tell it (launched_at_ms); until one does, "
        "its STARTED's instant: the claim, or for a run claimed ahead its due instant.")
    last_heartbeat_ms: int | None = None
    ended_at_ms: int | None = None
    error: ErrorOut | None = None
    result: str | None = None
    result_uri: str | None = None
    detail: str | None = None
    starts: int = 0
    duplicates: int = 0
    log_lines: int | None = Field(
        default=None, description="An ended run: the log lines it kept on jobs.logs "
        "(0: it wrote none); null while it runs, or when its worker did not tell.")  # fmt: skip


class Executions(BaseModel):
    job_id: str
    executions: list[ExecutionOut]


class CommandOut(BaseModel):
    job_id: str
    command: str


class CommandIn(BaseModel):
    """A command's optional body: why it is asked (who asks is the token's)."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, description="Why, kept in the history (1,000 characters).")


class WorkflowCancelOut(BaseModel):
    workflow_id: str
    jobs: list[str] = Field(description="The jobs of it not ended when the cancel was sent.")


class ScheduleIn(CommandIn):
    """A recurring job's new schedule or a pending one-off job's new run time, new
    parameters, or parameters with either (PATCH /api/v1/jobs/{id}), and why."""

    cron: str | dict[str, Any] | None = Field(
        None, description="A recurring job's new schedule: a cron expression (UTC) or a "
        "CronSchedule object."
    )
    params: dict[str, Any] | None = Field(None, description="New parameters, a JSON object.")
    run_at_ms: int | None = Field(
        None, strict=True, description="A one-off job that has not fired: the instant it now "
        "runs at (epoch ms), at most 60 s in the past (it then runs at once). Not with cron."
    )


class WorkflowIn(BaseModel):
    """A workflow: steps that run when the steps they depend on have succeeded."""

    model_config = ConfigDict(extra="forbid")

    steps: list[dict[str, Any]] = Field(
        description="Each: name, depends_on (step names), on_parent_failure, and the fields "
        "of a job but owner, workflow_id and idempotency_key."
    )
    owner: str | None = Field(
        None, description="Owner; defaults to the token's. Only an admin token names another."
    )
    workflow_id: str | None = Field(None, description="Derived from the key, or new, if left out.")
    idempotency_key: str | None = Field(
        None,
        description="Same owner and key, same workflow; the Idempotency-Key header also sets it.",
    )


class WorkflowAccepted(BaseModel):
    workflow_id: str
    job_ids: dict[str, str] = Field(description="Step name -> its job's id.")
    created: bool = Field(description="False when the idempotency key named a known workflow.")


class HeldOut(BaseModel):
    """What a wait, sleep or map step asks for, read from its parameters (docs/workflows.md,
    "Waits and sleeps", "Maps"); only the fields of its kind are set."""

    signal: str | None = Field(default=None, description="A wait: the signal that ends it.")
    prompt: str | None = Field(default=None, description="A wait: what a person is asked.")
    approval: bool = Field(default=False, description="A wait: a person approves or rejects.")
    timeout_ms: int | None = Field(
        default=None, description="A wait: how long it waits once begun; null: for ever."
    )
    for_ms: int | None = Field(default=None, description="A sleep: how long, once begun.")
    until_ms: int | None = Field(default=None, description="A sleep: when it wakes (epoch ms).")
    over: str | None = Field(default=None, description="A map: the parent step it maps.")
    item_type: str | None = Field(default=None, description="A map: each item's job type.")
    max_concurrency: int | None = Field(default=None, description="A map: items run at once.")


class MembersOut(BaseModel):
    """The jobs a step started (a map's items, a handler's spawned children), counted rather
    than listed: a map of 10,000 items is one step."""

    total: int = Field(description="Members the views hold.")
    by_state: dict[str, int] = Field(description="State -> members in it (none: left out).")


class StepOut(BaseModel):
    """One step of a workflow, as its graph needs it: a map's items and spawned children are
    not steps of their own but counted at the step that started them."""

    job_id: str
    step: str | None = None
    job_type: str
    kind: str = Field(default="job", description="job (a worker runs it), wait, sleep or map.")
    state: str
    depends_on: list[str] = Field(default_factory=list, description="Its parents' job ids.")
    attempt: int = 0
    updated_at_ms: int | None = None
    scheduled_at_ms: int | None = Field(
        None, description="When its current or next attempt is due; WAITING: a sleep's wake "
        "instant, a wait's timeout."
    )  # fmt: skip
    waiting_for: list[str] = Field(
        default_factory=list, description="BLOCKED: the parents (job ids) it still waits "
        "for; WAITING: the signal."
    )  # fmt: skip
    held: HeldOut | None = Field(None, description="A wait, sleep or map: what it asks for.")
    items: MembersOut | None = Field(None, description="A map: its items by state.")
    children: MembersOut | None = Field(
        None, description="The jobs it spawned (ctx.spawn), and theirs, by state; a map's "
        "items' children count at the map."
    )  # fmt: skip


class WorkflowOut(BaseModel):
    workflow_id: str
    owner: str
    steps: list[StepOut] = Field(description="Every step of the workflow the views hold, "
                                 "parents before children; a map's items and spawned "
                                 "children are counted at their step (items, children).")


class WorkerOut(BaseModel):
    worker_id: str
    host: str
    pid: int
    job_types: list[str]
    capacity: int
    running: int = Field(description="Executions in flight.")
    state: str
    started_at_ms: int
    at_ms: int = Field(description="Its last heartbeat.")
    age_ms: int
    stale: bool
    pool: str | None = Field(None, description="The pool it serves; null: jobs of no pool.")


class Workers(BaseModel):
    workers: list[WorkerOut]


class DeadLetterOut(BaseModel):
    job_id: str
    job_type: str
    owner: str
    reason: str | None = None
    attempts: int | None = None
    dead_lettered_at_ms: int
    error_type: str | None = None
    message: str | None = None


class DeadLetters(BaseModel):
    items: list[DeadLetterOut]


@pydantic_dataclass(frozen=True, kw_only=True, config=ConfigDict(extra="forbid"))
class RedriveIn(DlqFilter):
    """Which dead letters to put back: the filter ``jobstream dlq redrive`` selects them by,
    and how many, how fast, and why (``reason`` is the filter's: the dead letters' reason)."""

    limit: int = Field(100, ge=1, le=10_000)
    rate: float = Field(100.0, gt=0, le=10_000)
    dry_run: bool = False
    why: str | None = Field(None, description="Why, kept in each job's history.")


class RedriveOut(BaseModel):
    job_ids: list[str]
    dry_run: bool


class Problem(BaseModel):
    """Every error's body."""

    detail: str
    field: str | None = Field(None, description="The field at fault, for a 4xx about input.")
    quota: str | None = Field(None, description="The quota that refused it, for a 429: "
                                                "job_types, submit_rate, pending_jobs, streams.")


class ActivityOut(BaseModel):
    """One bucket of recent activity (rates per second; lateness in ms, null: no sample)."""

    at_ms: int
    fired_per_s: float
    started_per_s: float
    ended_per_s: float
    fire_lateness_p50_ms: int | None = None
    fire_lateness_p99_ms: int | None = None
    start_lateness_p50_ms: int | None = Field(
        None, description="Runs whose handler began in this bucket: the launch their worker "
        "told (launched_at_ms) minus their due instant; a run yet to tell counts by its "
        "STARTED, in the bucket of its STARTED.")
    start_lateness_p99_ms: int | None = None


class Overview(BaseModel):
    """What the dashboard's overview shows, as the token may see it."""

    total: int = Field(description="Jobs in the views.")
    by_state: dict[str, int]
    by_type: dict[str, dict[str, int]] = Field(description="Job type -> state -> jobs.")
    dead_letters: int = Field(description="Jobs in the DEAD_LETTERED state.")
    workers: int = Field(description="Workers that are not stale.")
    activity: list[ActivityOut] = Field(description="Oldest bucket first.")
    promise_ms: int = Field(description="The firing promise: a job fires within this of its time.")


class Use(BaseModel):
    used: int
    limit: int


class SubmitRate(BaseModel):
    per_s: float = Field(description="Jobs a second one token may submit for the owner.")
    burst: int = Field(description="Jobs one token may submit at once after a quiet spell.")
    available: int | None = Field(None, description="Jobs this token may submit at once now "
                                                    "(null: not asked by one of the owner's "
                                                    "tokens).")


class QuotaIn(BaseModel):
    """An owner's override: the quotas it sets; those left out take the defaults."""

    model_config = ConfigDict(extra="forbid")

    job_types: int | None = Field(None, ge=0, le=1_000_000)
    submit_rate: float | None = Field(None, gt=0, le=1e9, description="Jobs per second.")
    submit_burst: int | None = Field(None, ge=1, le=1_000_000_000)
    pending_jobs: int | None = Field(None, ge=0, le=1_000_000_000)
    streams: int | None = Field(None, ge=0, le=1_000_000)


class QuotasOut(BaseModel):
    """An owner's quotas (the defaults, or its override on jobs.quotas) and its use."""

    owner: str
    override: dict[str, float] = Field(description="The quotas set for this owner (a "
                                                   "quota's name -> its value); the others "
                                                   "take the defaults.")
    job_types: Use
    pending_jobs: Use
    submit_rate: SubmitRate
    streams: Use = Field(description="Live streams open (this token's, on /me; all the "
                                     "owner's tokens' otherwise) and the most per token.")


class Me(BaseModel):
    owner: str | None = Field(description="The owner the token acts for; null for an admin.")
    admin: bool
    quotas: QuotasOut | None = Field(None, description="The owner's quotas and use; null for "
                                                       "an admin.")


class BackfillIn(BaseModel):
    """A past range of a recurring job's occurrences to run, once each, and how fast."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", description="ISO 8601 instant with a zone: the first "
                       "occurrence at or after it runs.")  # fmt: skip
    to: str = Field(description="ISO 8601 instant with a zone, not in the future: occurrences "
                    "before it run (the range is [from, to)).")  # fmt: skip
    rate: float | None = Field(
        None, description="Occurrences started a second, 0.01 to 1000 (default 10)."
    )
    dry_run: bool = Field(False, description="List the occurrences and their job ids; send "
                          "nothing.")  # fmt: skip


class BackfillOccurrence(BaseModel):
    occurrence_ms: int = Field(description="The occurrence's nominal instant (epoch ms).")
    occurrence: str = Field(description="The same, ISO 8601 in UTC.")
    job_id: str = Field(description="The one-off job that runs it (fixed by job and instant).")
    created: bool = Field(description="False when the job existed already (an earlier "
                          "backfill ran or sent it), or on a dry run.")  # fmt: skip
    run_at_ms: int | None = Field(description="When it is due, paced at the rate; null when "
                                  "it existed already.")  # fmt: skip


class BackfillOut(BaseModel):
    job_id: str = Field(description="The recurring job backfilled.")
    from_ms: int
    to_ms: int
    rate: float
    dry_run: bool
    submitted: int = Field(description="Occurrences sent now (0 on a dry run).")
    existing: int = Field(description="Occurrences whose job existed already: not sent again.")
    occurrences: list[BackfillOccurrence] = Field(description="Oldest first.")
