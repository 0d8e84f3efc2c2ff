"""What the timers keep per job of a workflow, and per workflow.

Both are kept under their workflow's owner and id together: two owners' workflows of
the same name are two workflows. A :class:`StepNode` lives as long as the workflow's
state: its parents, the ones it still waits for (the blocked index is derived from
them), and, once it ended, its outcome and result for its children's executions. A
:class:`WorkflowRecord` marks a workflow submitted as one unit (a resubmission is a
no-op) or cancelled, counts its steps that ended, and holds a recurring workflow's latest
run. Both are JSON, so the timers' changelog stays readable with a console consumer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self

import orjson


class _JsonRecord:
    """What both records below do: change a copy, and go to and from JSON."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]  # for type checkers: both are dataclasses

    def evolve(self, **changes: Any) -> Self:
        return replace(self, **changes)

    def encode(self) -> bytes:
        return orjson.dumps(self)

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        return cls(**orjson.loads(raw))


@dataclass(frozen=True, slots=True)
class StepNode(_JsonRecord):
    owner: str
    workflow_id: str
    job_id: str
    parents: list[str] = field(default_factory=list)
    """Its depends_on: job ids of the same workflow."""
    waiting: list[str] = field(default_factory=list)
    """Parents it still waits for; empty once released, cancelled or never blocked."""
    step: str | None = None
    """Its name, for a job submitted in a workflow."""
    outcome: str | None = None
    """SUCCEEDED, DEAD_LETTERED or CANCELLED once it ended (the latest: a redrive may follow)."""
    result: str | None = None
    result_uri: str | None = None
    ended_at_ms: int | None = None
    awaits: str | None = None
    """A wait step while it is WAITING: the signal that ends it."""


@dataclass(frozen=True, slots=True)
class WorkflowRecord(_JsonRecord):
    owner: str
    workflow_id: str
    idempotency_key: str | None = None
    steps: int = 0
    """Steps of the WorkflowSubmitted; 0 for a workflow known only from a cancel."""
    submitted_at_ms: int | None = None
    cancelled: bool = False
    """Cancelled: later submissions into it are refused."""
    schedule: bool = False
    """A recurring workflow: its steps are a template, its nodes are its runs."""
    schedule_id: str | None = None
    """A run of a recurring workflow: the schedule told when the run ends."""
    ended: int = 0
    """Steps that have ended (each counted once, at its first end)."""
    outcome: str | None = None
    """The worst end of its steps so far (jobstream._pipeline.workflows.run_outcome)."""
    last_run: str | None = None
    """A recurring workflow: its latest run's workflow id."""
