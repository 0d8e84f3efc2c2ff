"""The vocabulary of a job's life (docs/lifecycle.md): event kinds, job states, their errors.

Every component speaks through JobLifecycle events on jobs.events; this module names what
they say, once. :class:`LifecycleKind`'s values are the symbols of the Avro enum
``io.jobstream.LifecycleKind`` and :class:`JobState`'s the states written to jobs.status,
so a member equals (and hashes like) the string read off the wire or out of JSON: code
compares a decoded event's ``kind`` with a member as it is, and fastavro and orjson write
a member as its symbol. tests/pipeline/model/test_lifecycle.py holds the enum to the schema.

No imports from the rest of the engine: the serde, the processors and the worker all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class LifecycleKind(StrEnum):
    """What one JobLifecycle event says happened; the Avro symbols, in their order."""

    UNKNOWN = "UNKNOWN"
    """The schema's default: a symbol this reader does not know. Illegal to fold."""
    SCHEDULED = "SCHEDULED"
    BLOCKED = "BLOCKED"
    FIRED = "FIRED"
    STARTED = "STARTED"
    HEARTBEAT = "HEARTBEAT"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    LOST = "LOST"
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    DEAD_LETTERED = "DEAD_LETTERED"
    CANCELLED = "CANCELLED"
    PAUSED = "PAUSED"
    RESUMED = "RESUMED"
    DUPLICATE = "DUPLICATE"
    WAITING = "WAITING"
    """A workflow step that runs on no worker (a wait for a signal, a sleep) has begun."""
    EXPIRED = "EXPIRED"
    """The job gave up on time: its deadline passed, it stayed QUEUED past its queue limit,
    or its wait ended without the signal."""
    HELD = "HELD"
    """A job waits on one of its keys (docs/keys.md): ``held_by`` names the key,
    ``waiting_for`` the jobs it waits behind. Its state does not change."""
    COLLAPSED = "COLLAPSED"
    """A debounced or singleton submission runs as another job (``joined_job_id``): it
    joined a debounce window's run, was dropped for its singleton key's job, or replaced."""


class JobState(StrEnum):
    """Where a job is in its life; the value written is the name."""

    SCHEDULED = "SCHEDULED"
    BLOCKED = "BLOCKED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED_RETRYING = "FAILED_RETRYING"
    DEAD_LETTERED = "DEAD_LETTERED"
    CANCELLED = "CANCELLED"
    PAUSED = "PAUSED"
    WAITING = "WAITING"
    """A step held by the timers, not a worker: a wait for a signal, a sleep."""
    EXPIRED = "EXPIRED"
    COLLAPSED = "COLLAPSED"
    """A debounced or singleton submission that runs as another job (its ``joined_job_id``)."""


FAILURE_KINDS = frozenset({LifecycleKind.FAILED, LifecycleKind.TIMED_OUT, LifecycleKind.LOST})
"""An attempt that ended without success: the retry router decides what follows."""
TERMINAL_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.DEAD_LETTERED, JobState.CANCELLED, JobState.EXPIRED,
     JobState.COLLAPSED}
)
"""A finished job: only its next cron run or a redrive brings it back, and its record is
purged after the retention."""

SCHEDULE_JOB_TYPE = "jobstream.workflow"
"""The job type of a recurring workflow's own status: its schedule is a job of this type in
jobs.status (SCHEDULED, PAUSED, CANCELLED; its runs are workflows of their own), under the
id :func:`jobstream._pipeline.workflows.ids.schedule_job_id` derives. Reserved: no job is
submitted with it."""

LEASE_EXPIRED = "LeaseExpired"
"""The error of a LOST run: no heartbeat within the lease (its process died or stalled)."""
WORKER_CRASHED = "WorkerCrashed"
"""The error of a run whose handler's child process died (process isolation)."""
WORKER_STOPPED = "WorkerStopped"
"""The error of a run its worker gave up when it stopped (the drain timed out)."""
LEASE_LOST = "LeaseLost"
"""The error of a run its worker stopped itself: none of its heartbeats had reached the
brokers for most of the lease (the worker paused or cut off), so its retry could soon run
elsewhere (pipeline/worker/lease.py)."""
PROCESS_DIED = frozenset({LEASE_EXPIRED, WORKER_CRASHED})
"""Errors that say the process running the attempt died under it: the handler may be
what killed it, so its next attempt runs alone (pipeline/worker/quarantine.py)."""

PROGRESS_MESSAGE_CHARS = 200
"""The longest message a run's progress carries (``ctx.progress``): longer ones are cut,
by the worker and again by the status processor, whoever wrote the HEARTBEAT."""

IMPLIED_ERRORS: Mapping[str, tuple[str, str]] = {
    LifecycleKind.LOST: (
        LEASE_EXPIRED,
        "no heartbeat within the lease: the worker running it died or stalled",
    ),
    LifecycleKind.TIMED_OUT: ("Timeout", "the attempt ran past its deadline"),
    LifecycleKind.EXPIRED: ("Expired", "the job gave up on time: a deadline or a limit passed"),
}
"""The (error type, message) a failure without an ErrorInfo stands for: the status
processor declares a run LOST without any error from the worker."""
