"""A cancel of a job's runs under way: the CancelRequested record on jobs.control.

A job that has fired is out of the timers' hands: its execution waits in an execution
topic, sits in a worker's buffer, or runs. Whoever learns of a cancel of such a job (the
timers, reading a JobCancelled or a WorkflowCancelled that finds no pending fire) writes a
:class:`CancelRequest` to jobs.control, which every worker reads whole; the worker that
holds the execution settles it CANCELLED (docs/lifecycle.md, "Cancelling a run").

``up_to_epoch`` fences the request: it cancels the executions fired at or before it (an
execution's epoch is its firing instant on the timers' clock, and the timers write the
request with the instant they read the cancel), never a later firing of the same job id
(a dead letter redriven after the cancel).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.model.lifecycle import epoch_of
from pipeline.model.records import Event
from pipeline.partitioning import partition_key

CANCELLED_DETAIL = "cancelled"
"""The detail of a CANCELLED that names no reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelRequest:
    """Stop the runs of one job fired at or before ``up_to_epoch``."""

    job_id: str
    workflow_id: str | None = None
    """The job's workflow, if any: with the job id, the record's key."""
    requested_at_ms: int
    """When the cancel was asked for (the command's time, epoch ms)."""
    up_to_epoch: int = 0
    """The latest firing instant it cancels; 0: every execution of the job."""
    requested_by: str | None = None
    """Who asked: ``cli:<user>@<host>``, ``api:<owner>``, a client's own name."""
    reason: str | None = None

    @property
    def detail(self) -> str:
        """The detail of the CANCELLED it ends a run with: the reason."""
        return self.reason or CANCELLED_DETAIL

    def covers(self, execution: Mapping[str, Any]) -> bool:
        """Whether ``execution`` (an ExecutionRequested or a JobLifecycle) is one it cancels."""
        if execution.get("job_id") != self.job_id:
            return False
        return not self.up_to_epoch or epoch_of(execution) <= self.up_to_epoch

    @property
    def key(self) -> bytes:
        return partition_key(self.job_id, self.workflow_id)

    def to_event(self) -> Event:
        return Event("CancelRequested", {
            "job_id": self.job_id, "workflow_id": self.workflow_id,
            "requested_at_ms": self.requested_at_ms, "up_to_epoch": self.up_to_epoch,
            "requested_by": self.requested_by, "reason": self.reason,
        })  # fmt: skip

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> CancelRequest:
        """From a decoded CancelRequested (its Avro fields)."""
        return cls(job_id=str(data["job_id"]), workflow_id=data.get("workflow_id"),
                   requested_at_ms=int(data["requested_at_ms"]),
                   up_to_epoch=int(data.get("up_to_epoch") or 0),
                   requested_by=data.get("requested_by"), reason=data.get("reason"))  # fmt: skip
