"""A job's state machine: docs/lifecycle.md's table, epoch fencing and duplicate runs.

Pure: :func:`transition` takes what is known of a job (a :class:`JobRecord`, or None for
a job never seen) and one JobLifecycle event, and returns a :class:`Decision`: the new
record, or why the event is rejected. No clock (times come from the event) and no I/O,
so every rule is a fast unit test.

Rules, in order:

1. DUPLICATE events are the processor's own records read back: ignored.
2. Epoch fencing: an outcome (STARTED, HEARTBEAT, SUCCEEDED, FAILED, TIMED_OUT) of an
   epoch older than the job's comes from a zombie worker or a redelivered execution:
   DUPLICATE, never applied. So is a FIRED of an older epoch (a firing replayed). A LOST
   of an older epoch lost its meaning when the newer run fired: ignored.
   A CANCELLED naming an execution is a worker's: the outcome of that execution, fenced
   the same way (the timers' CANCELLED of a job not fired names none).
3. An outcome for an execution that already finished (succeeded, failed, timed out or
   was declared lost) is a second run of it: DUPLICATE. A STARTED for the execution a
   RUNNING job already runs (a worker died and its execution was redelivered, to another
   worker or to itself restarted) is applied, since the new run is the live one, and
   also flagged: the decision names the worker of the first start (``rerun_of``).
4. The table: a (state, kind) pair it lacks is illegal, rejected and counted. The
   transitions marked "(cron)" in the contract (FIRED while QUEUED, RUNNING or SUCCEEDED)
   are illegal for a job known to be one-off.

A HEARTBEAT may carry the run's progress (``ctx.progress``): it becomes the job's
``progress``, held to 0..1 and to its message bound whoever wrote the event, and fenced
like the HEARTBEAT (a stale epoch's is a duplicate). It stays when the run ends and is
cleared by the next FIRED or STARTED, so an attempt never shows an earlier one's.

A CANCELLED records who asked and why (``cancellation``); a worker's also finishes its
execution, so a late SUCCEEDED of the run it stopped is a duplicate. A schedule cancelled
at the timers is CANCELLED while its last run may still go on: that run's CANCELLED
changes nothing (ignored), any other outcome of it is illegal.

A HELD (a job waits on a key: a worker holds a QUEUED attempt back on its concurrency
key, the timers hold a due one on its rate key or behind its singleton key's job) changes
no state:
it tells ``held_by`` (the key) and ``waiting_for`` (the jobs it waits behind), both
cleared by the job's next event. A COLLAPSED (a
debounced or singleton submission runs as another job) ends any job not ended, naming
that job (``joined_job_id``). The first event of a job, or an execution's spec, tells
its ``keys``.

An EXPIRED (the job gave up on time, pipeline/model/deadlines.py) ends any job not ended,
its error becoming ``last_error``. One naming an execution (a QUEUED attempt the status
processor expired) finishes it, so a late STARTED of it is a duplicate, and one of a
superseded epoch is ignored, as a LOST is.

Recurrence is learnt from an execution's spec (``execution.spec.cron``, on STARTED,
FAILED, TIMED_OUT, LOST): SCHEDULED and FIRED carry no spec. A recurring job goes back
to SCHEDULED after SUCCEEDED (runs + 1) while its schedule has runs left; a job whose
spec was never seen is taken as one-off, so SUCCEEDED ends it.

A recurring workflow's status is a job of type ``jobstream.workflow`` (SCHEDULE_JOB_TYPE,
pipeline/timers/recurring.py): recurring by its type, it is SCHEDULED, PAUSED or CANCELLED
only, and a SCHEDULED or PAUSED of it that carries a ``result`` is the end of one of its
runs (the run's id and outcome): its ``result``, and one more in ``runs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from math import isfinite

from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.model.job import cron_of
from jobstream._pipeline.model.keys import shown
from jobstream._pipeline.model.lifecycle import (
    FAILURE_KINDS,
    IMPLIED_ERRORS,
    PROGRESS_MESSAGE_CHARS,
    SCHEDULE_JOB_TYPE,
    TERMINAL_STATES,
    JobState,
    LifecycleKind,
)
from jobstream._pipeline.model.params import params_uri, summarize_params
from jobstream._pipeline.model.records import JobLifecycle, JobSpec, Progress
from jobstream._pipeline.scheduling import next_due_ms
from jobstream._pipeline.serde.status_json import JobStatus
from jobstream._pipeline.status.state import Cancellation, Changes, JobRecord

S, K = JobState, LifecycleKind

OUTCOMES = frozenset({K.STARTED, K.HEARTBEAT, K.SUCCEEDED, K.FAILED, K.TIMED_OUT})
"""What workers report about one execution: fenced by epoch and by execution id."""
FINISHING = frozenset({K.SUCCEEDED, *FAILURE_KINDS})
KINDS = frozenset(K) - {K.UNKNOWN, K.DUPLICATE}
"""Every kind the machine folds; DUPLICATE is its own output and UNKNOWN is illegal."""

_FOLDED: dict[object, LifecycleKind] = {kind: kind for kind in KINDS}
"""A kind to its member (a record built in code may hold the symbol, a str), which the
sets and the table below then find by identity rather than by comparing strings."""
# The kinds the rules test one at a time, read off the enum once: on Python 3.11 a member
# read through its class (EnumType has a __getattr__) costs several global reads, and
# transition() runs for every event on jobs.events.
_DUPLICATE, _FIRED, _STARTED, _HEARTBEAT, _SUCCEEDED, _LOST, _RETRY_SCHEDULED, _DEAD_LETTERED = (
    K.DUPLICATE, K.FIRED, K.STARTED, K.HEARTBEAT, K.SUCCEEDED, K.LOST, K.RETRY_SCHEDULED,
    K.DEAD_LETTERED,
)  # fmt: skip
_CANCELLED = K.CANCELLED
_BLOCKED = K.BLOCKED
_WAITING = K.WAITING
_EXPIRED = K.EXPIRED
_HELD = K.HELD
_COLLAPSED = K.COLLAPSED
_FENCED = OUTCOMES | {K.FIRED}
"""Of an older epoch, a zombie's outcome or a replayed firing: DUPLICATE."""
_TAKES_EPOCH = OUTCOMES | {K.FIRED, K.LOST}
_SETS_SCHEDULE = frozenset({K.SCHEDULED, K.RESUMED})
_RUN_ENDS = frozenset({K.SCHEDULED, K.PAUSED})
"""A recurring workflow's kinds that may carry the end of one of its runs."""
_IDENTITY = ("job_type", "owner", "workflow_id", "step", "pool", "deadline_ms", "queue_limit_ms",
             "submitted_by")  # fmt: skip
"""What the job is, as any event that tells it does (the first and FIRED tell the last
three)."""
_SUMMARIZED = ("labels", "params")
"""Spec fields jobs.status shows through the submission's summary (:func:`_submission`)."""
_FROM_SPEC = tuple(name for name in JobStatus.model_fields
                   if name in JobSpec.__struct_fields__ and name not in _SUMMARIZED)  # fmt: skip
"""Spec fields jobs.status shows as they are (job_type, owner, priority): a field added to
both JobSpec and JobStatus is copied from an execution's spec with no change here."""


def _failed(target: JobState) -> dict[str, JobState]:
    return {kind: target for kind in K if kind in FAILURE_KINDS}


# docs/lifecycle.md, row by row ("-" cells are absent; the SCHEDULED column follows).
_ROWS: dict[JobState, dict[str, JobState]] = {
    S.SCHEDULED: {K.FIRED: S.QUEUED, K.HELD: S.SCHEDULED, K.STARTED: S.RUNNING,
                  K.RETRY_SCHEDULED: S.FAILED_RETRYING,
                  K.CANCELLED: S.CANCELLED, K.PAUSED: S.PAUSED, K.BLOCKED: S.BLOCKED,
                  K.WAITING: S.WAITING},
    S.QUEUED: {K.FIRED: S.QUEUED, K.HELD: S.QUEUED, K.STARTED: S.RUNNING, K.SUCCEEDED: S.SUCCEEDED,
               **_failed(S.FAILED_RETRYING), K.RETRY_SCHEDULED: S.FAILED_RETRYING,
               K.DEAD_LETTERED: S.DEAD_LETTERED, K.CANCELLED: S.CANCELLED},
    S.RUNNING: {K.FIRED: S.QUEUED, K.STARTED: S.RUNNING, K.HEARTBEAT: S.RUNNING,
                K.SUCCEEDED: S.SUCCEEDED, **_failed(S.FAILED_RETRYING),
                K.RETRY_SCHEDULED: S.FAILED_RETRYING, K.DEAD_LETTERED: S.DEAD_LETTERED,
                K.CANCELLED: S.CANCELLED, K.HELD: S.RUNNING},
    S.FAILED_RETRYING: {K.FIRED: S.QUEUED, K.HELD: S.FAILED_RETRYING, K.STARTED: S.RUNNING,
                        K.RETRY_SCHEDULED: S.FAILED_RETRYING, K.DEAD_LETTERED: S.DEAD_LETTERED,
                        K.CANCELLED: S.CANCELLED},
    # A recurring job's next run held on its key while this one runs or has ended.
    S.SUCCEEDED: {K.FIRED: S.QUEUED, K.HELD: S.SUCCEEDED},
    S.DEAD_LETTERED: {K.FIRED: S.QUEUED, K.RETRY_SCHEDULED: S.FAILED_RETRYING,
                      K.HELD: S.DEAD_LETTERED},
    S.CANCELLED: {},
    S.PAUSED: {K.CANCELLED: S.CANCELLED, K.PAUSED: S.PAUSED, K.RESUMED: S.SCHEDULED},
    # Waiting for parents: BLOCKED again with fewer parents, SCHEDULED (the column below)
    # once released, CANCELLED when a parent failed.
    S.BLOCKED: {K.BLOCKED: S.BLOCKED, K.FIRED: S.QUEUED, K.CANCELLED: S.CANCELLED,
                K.WAITING: S.WAITING},
    # Held by the timers, not a worker (a wait, a sleep): it ends there, on a signal or at
    # its instant, and a cancel or the workflow's cancel ends it too.
    S.WAITING: {K.WAITING: S.WAITING, K.SUCCEEDED: S.SUCCEEDED, K.CANCELLED: S.CANCELLED},
    S.EXPIRED: {},
    S.COLLAPSED: {},
}  # fmt: skip

Transitions = dict[tuple[JobState | None, str], JobState]

# SCHEDULED (a new submission or an updated schedule) is legal from every non-terminal state.
_RESCHEDULED: Transitions = {
    (state, K.SCHEDULED): S.SCHEDULED for state in S if state not in TERMINAL_STATES
}

# EXPIRED (a deadline or a queue limit passed, a wait ran out) ends any job not ended.
_EXPIRES: Transitions = {
    (state, K.EXPIRED): S.EXPIRED for state in [*S, None] if state not in TERMINAL_STATES
}

# COLLAPSED (a debounced or singleton submission runs as another job) ends it, whatever
# the timers had told of it before.
_COLLAPSES: Transitions = {
    (state, K.COLLAPSED): S.COLLAPSED for state in [*S, None] if state not in TERMINAL_STATES
}

# A job never seen: its first event is SCHEDULED (or BLOCKED, or CANCELLED for a schedule
# without a future run); the rest of SCHEDULED's row lets a processor that started after
# the submission (events retention, a purged record) pick the job up where it is.
_NEW: Transitions = {
    (None, kind): target
    for kind, target in {**_ROWS[S.SCHEDULED], K.SCHEDULED: S.SCHEDULED}.items()
}
_FROM_ROWS: Transitions = {
    (state, kind): target for state, row in _ROWS.items() for kind, target in row.items()
}

TABLE: Transitions = {
    **_FROM_ROWS,
    **_RESCHEDULED,
    **_EXPIRES,
    **_COLLAPSES,
    **_NEW,
}
"""(current state, event kind) -> new state; None is a job not seen yet."""

CRON_ONLY = frozenset({(S.QUEUED, K.FIRED), (S.RUNNING, K.FIRED), (S.SUCCEEDED, K.FIRED)})
"""Legal only for a recurring job: the next run fires while this one is queued, runs or
is done. Recurrence is often unknown here (no spec seen yet): only a known one-off job
is refused."""


class Verdict(StrEnum):
    APPLIED = "APPLIED"
    DUPLICATE = "DUPLICATE"
    """An outcome of a stale epoch or of a finished execution: recorded, not applied."""
    ILLEGAL = "ILLEGAL"
    """Not in the table: rejected and counted."""
    IGNORED = "IGNORED"
    """Nothing to do (the processor's own DUPLICATE record, a superseded LOST)."""


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    record: JobRecord | None
    """APPLIED: the new record; otherwise the record as it was (None for an unknown job)."""
    reason: str = ""
    rerun_of: str | None = None
    """APPLIED STARTED of an execution already running: the worker that started it first
    (or "an unknown worker"), so the processor records a DUPLICATE naming both runs."""

    @property
    def state(self) -> JobState | None:
        return None if self.record is None else self.record.state


def execution_id_of(event: JobLifecycle) -> str | None:
    """The execution an event is about: its own field, else its execution's."""
    if event.execution_id:
        return event.execution_id
    return None if event.execution is None else event.execution.execution_id


def transition(record: JobRecord | None, event: JobLifecycle) -> Decision:
    """Fold one JobLifecycle event into what is known of its job."""
    raw = event.kind
    kind = _FOLDED.get(raw)
    if kind is None:
        if raw == _DUPLICATE:
            return Decision(Verdict.IGNORED, record, "a DUPLICATE record")
        return Decision(Verdict.ILLEGAL, record, f"unknown kind {raw}")
    epoch = event.epoch or 0
    execution = execution_id_of(event)
    outcome = kind in OUTCOMES or (kind is _CANCELLED and execution is not None)
    if record is not None and epoch < record.epoch:
        if outcome or kind in _FENCED:
            return Decision(Verdict.DUPLICATE, record,
                            f"stale epoch {epoch} < {record.epoch}")  # fmt: skip
        if kind == _LOST or (kind is _EXPIRED and execution is not None):
            return Decision(Verdict.IGNORED, record, f"{kind} of superseded epoch {epoch}")
    if record is not None and outcome and execution in record.finished:
        return Decision(Verdict.DUPLICATE, record, f"execution {execution} already finished")
    current = None if record is None else record.state
    if kind is _CANCELLED and current is S.CANCELLED and execution is not None:
        return Decision(Verdict.IGNORED, record, "a run of a job cancelled already")
    target = TABLE.get((current, kind))
    if target is None or (
        (current, kind) in CRON_ONLY and record is not None and record.recurring is False
    ):
        return Decision(Verdict.ILLEGAL, record, f"{current or 'NEW'} + {kind}")
    base = record or JobRecord(job_id=event.job_id, state=target)
    after = _apply(base, kind, epoch, target, event)
    if kind is _STARTED and current is S.RUNNING and execution == base.execution_id:
        first = base.worker_id or "an unknown worker"
        return Decision(Verdict.APPLIED, after, f"execution {execution} already started by "
                        f"{first}", rerun_of=first)  # fmt: skip
    return Decision(Verdict.APPLIED, after)


def _apply(record: JobRecord, kind: LifecycleKind, epoch: int, target: JobState,
           event: JobLifecycle) -> JobRecord:  # fmt: skip
    """The record after a legal transition: state, then what this kind of event carries."""
    changes: Changes = {"state": target, **_identity(record, event)}
    workflow = changes.get("job_type", record.job_type) == SCHEDULE_JOB_TYPE
    recurring = workflow or changes.get("recurring", record.recurring)
    if workflow and kind in _RUN_ENDS and event.result is not None:  # one of its runs ended
        changes.update(result=event.result, runs=record.runs + 1)
    attempt = event.attempt or 0
    if kind in _TAKES_EPOCH:
        changes["epoch"] = max(record.epoch, epoch)
    if attempt > 0 and kind != _HEARTBEAT:
        changes["attempt"] = attempt
    execution = execution_id_of(event)
    if record.state is S.DEAD_LETTERED:  # a redrive: the failure is history now
        changes["last_error"] = None
    if kind is _BLOCKED or kind is _WAITING:
        changes.update(scheduled_at_ms=event.scheduled_at_ms,
                       waiting_for=tuple(event.waiting_for or ()))  # fmt: skip
    elif kind is _HELD:
        changes.update(held_by=event.held_by, waiting_for=tuple(event.waiting_for or ()))
    elif record.waiting_for:
        changes["waiting_for"] = ()
    if record.held_by is not None and kind is not _HELD:
        changes["held_by"] = None
    if kind in _SETS_SCHEDULE:
        changes["scheduled_at_ms"] = event.scheduled_at_ms
        if recurring:
            changes["next_fire_at_ms"] = event.scheduled_at_ms
    elif kind == _FIRED:
        changes.update(scheduled_at_ms=event.scheduled_at_ms, execution_id=execution,
                       fires=record.fires + (1 if attempt <= 1 else 0),
                       throttled_ms=event.throttled_ms, progress=None)  # fmt: skip
    elif kind == _STARTED:
        changes.update(execution_id=execution, worker_id=event.worker_id, progress=None)
    elif kind == _HEARTBEAT:
        if event.progress is not None:
            changes["progress"] = _progress(event.progress, record.progress)
    elif kind == _RETRY_SCHEDULED:
        changes["scheduled_at_ms"] = event.scheduled_at_ms
    elif kind in FINISHING:
        changes["finished"] = record.finish(execution)
        if kind == _SUCCEEDED:
            changes.update(result=event.result, result_uri=event.result_uri,
                           last_error=None)  # fmt: skip
            changes.update(_after_success(record, changes, event))
        else:
            changes["last_error"] = _last_error(kind, event)
    elif kind == _DEAD_LETTERED:
        changes["scheduled_at_ms"] = None
        if event.error:
            changes["last_error"] = _last_error(kind, event)
    elif kind is _CANCELLED:
        changes["cancellation"] = _cancellation(event)
        if execution is not None:
            changes["finished"] = record.finish(execution)
    elif kind is _COLLAPSED:
        changes.update(scheduled_at_ms=None, next_fire_at_ms=None,
                       joined_job_id=event.joined_job_id)  # fmt: skip
    elif kind is _EXPIRED:
        changes.update(scheduled_at_ms=None, next_fire_at_ms=None,
                       last_error=_last_error(kind, event))  # fmt: skip
        if execution is not None:
            changes["finished"] = record.finish(execution)
    return record.evolve(**changes)


def _identity(record: JobRecord, event: JobLifecycle) -> Changes:
    """Who the job is, from whatever the event tells: its fields, its execution's spec."""
    found: Changes = {}
    for name in _IDENTITY:
        value = getattr(event, name)
        if value:
            found[name] = value
    execution = event.execution
    if execution is not None:
        spec = execution.spec
        found.update({name: value for name in _FROM_SPEC if (value := getattr(spec, name))})
        found.update(cron=spec.cron, recurring=spec.cron is not None)
        if record.params_sha256 is None:  # first seen here: a processor that started late
            found.update(_submission(spec))
        if execution.workflow_id:
            found["workflow_id"] = execution.workflow_id
        if spec.job_keys is not None:
            found["keys"] = shown(spec.job_keys)
    if event.created_at_ms is not None:
        found["created_at_ms"] = event.created_at_ms
    if event.job_keys is not None:
        found["keys"] = shown(event.job_keys)
    if event.params_sha256 is not None:  # labels travel with the parameters' summary
        found.update(params=event.params, params_bytes=event.params_bytes,
                     params_sha256=event.params_sha256, labels=dict(event.labels or {}))
    if "params_sha256" in found:
        found["params_uri"] = params_uri(record.job_id, found["params"])
    return {name: value for name, value in found.items() if getattr(record, name) != value}


def _submission(spec: JobSpec) -> Changes:
    """Labels and the parameters' summary, from an execution's spec."""
    return {"labels": dict(spec.labels or {}), **summarize_params(spec.params)._asdict()}


def _after_success(record: JobRecord, changes: Changes,
                   event: JobLifecycle) -> Changes:  # fmt: skip
    """A recurring job with runs left is SCHEDULED again for its next due instant.

    ``changes`` are those the event already makes to ``record`` (its spec may tell that the
    job recurs): read through them rather than building a record only to read it.
    """
    recurring, cron = changes.get("recurring", record.recurring), changes.get("cron", record.cron)
    if not recurring or cron is None:
        return {}
    runs = record.runs + 1
    try:
        following = next_due_ms(cron_of(cron), event.at_ms,
                                 job_id=record.job_id,
                                 runs_so_far=max(record.fires, runs))  # fmt: skip
    except (ValueError, JobstreamError):  # a schedule no longer valid: nothing follows
        following = None
    if following is None:
        return {"runs": runs, "next_fire_at_ms": None}
    return {"runs": runs, "state": S.SCHEDULED, "scheduled_at_ms": following,
            "next_fire_at_ms": following}  # fmt: skip


def _progress(report: Progress, held: Progress | None) -> Progress | None:
    """A HEARTBEAT's progress as jobs.status shows it: the fraction held to 0..1, the
    message cut to its bound (a faulty writer's record must not make the status one that
    readers refuse). A fraction that is no number leaves the ``held`` one as it was."""
    fraction = float(report.fraction or 0.0)
    if not isfinite(fraction):
        return held
    message = report.message
    if (type(report.fraction) is float and 0.0 <= fraction <= 1.0
            and (message is None or len(message) <= PROGRESS_MESSAGE_CHARS)):  # fmt: skip
        return report  # as written: the usual case
    return Progress(fraction=min(1.0, max(0.0, fraction)), at_ms=report.at_ms,
                    message=None if message is None else message[:PROGRESS_MESSAGE_CHARS])


def _cancellation(event: JobLifecycle) -> Cancellation:
    """Who asked for the cancel (None: jobstream itself, e.g. a parent failed) and why; a
    worker's CANCELLED also names the worker that stopped the run."""
    return Cancellation(by=event.requested_by, reason=event.detail, at_ms=event.at_ms,
                        worker_id=event.worker_id)  # fmt: skip


def _last_error(kind: LifecycleKind, event: JobLifecycle) -> dict[str, str]:
    error = event.error
    if error:
        return {"error_type": error.error_type, "message": error.message}
    error_type, message = IMPLIED_ERRORS.get(kind, ("UnknownError", event.detail or kind))
    return {"error_type": error_type, "message": message}
