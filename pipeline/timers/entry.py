"""A timer entry: what the timer store holds for one pending firing.

Entries are the values of the changelog (JSON, so an operator can read the changelog
with a console consumer) and of the store's index by timer id.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

Kind = Literal["job", "retry", "marker", "workflow"]

RETRY_SUFFIX = "/retry"


def retry_timer_id(job_id: str) -> str:
    """A retry waits beside the job's own schedule (a cron job keeps its next run)."""
    return job_id + RETRY_SUFFIX


SCHEDULE_PREFIX = "S:"
ENDED_PREFIX = "E:"


def _scoped(owner: str, workflow_id: str) -> str:
    """A workflow's owner and id in one timer id (an owner holds no control character)."""
    return f"{owner}\x00{workflow_id}"


def schedule_timer_id(owner: str, workflow_id: str) -> str:
    """The timer of a recurring workflow. Prefixed: an owner may start with a lower-case
    letter, which in the changelog would read as a step node's or a workflow record's key."""
    return SCHEDULE_PREFIX + _scoped(owner, workflow_id)


def ended_timer_id(owner: str, workflow_id: str) -> str:
    """The marker that forgets an ended workflow's record once it expires."""
    return ENDED_PREFIX + _scoped(owner, workflow_id)


@dataclass(frozen=True, slots=True)
class TimerEntry:
    timer_id: str
    """The job id; the job id + '/retry' for a pending retry."""
    kind: Kind
    """job: a submission's schedule; retry: one more attempt; marker: an idempotency
    record kept after a one-off job fired, so a resubmission stays a no-op; workflow: a
    recurring workflow's schedule (its job holds the template, see schedule_timer_id)."""
    job: dict[str, Any]
    """The JobSubmitted record (job_id, idempotency_key, workflow_id, spec, ...)."""
    due_ms: int
    """The instant to fire (cron jitter applied); for a marker, when it expires."""
    runs: int = 0
    """Runs fired so far (recurring jobs)."""
    attempt: int = 1
    paused: bool = False
    blocked: bool = False
    """Waiting for parents (its step node says which): out of the schedule until released."""
    errors: list[dict[str, Any]] = field(default_factory=list)
    """A retry's earlier attempts' errors."""
    held_by: str | None = None
    """The id of the rate limit holding the job back (pipeline/limits/model.py), while it
    waits in that limit's queue instead of the schedule."""
    held_at_ms: int | None = None
    """When a rate limit first held it back: its firing reports the time since as
    throttled, apart from the timers' own lateness."""

    @property
    def job_id(self) -> str:
        return str(self.job["job_id"])

    @property
    def spec(self) -> dict[str, Any]:
        return self.job["spec"]

    @property
    def owner(self) -> str:
        """The job's owner; "" for a marker, which keeps no spec."""
        return str((self.job.get("spec") or {}).get("owner", ""))

    def evolve(self, **changes: Any) -> TimerEntry:
        return replace(self, **changes)

    def encode(self) -> bytes:
        return orjson.dumps(self)  # orjson reads dataclasses natively, without a deep copy

    @classmethod
    def decode(cls, raw: bytes) -> TimerEntry:
        return cls(**orjson.loads(raw))
