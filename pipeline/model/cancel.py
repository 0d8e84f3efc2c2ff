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

import msgspec

from jobstream._pipeline.model.records import CancelRequested, Event, ExecutionRequested
from jobstream._pipeline.partitioning import partition_key

CANCELLED_DETAIL = "cancelled"
"""The detail of a CANCELLED that names no reason."""


class CancelRequest(CancelRequested, frozen=True, kw_only=True):
    """Stop the runs of one job fired at or before ``up_to_epoch``: the CancelRequested
    record, with what a worker asks of it."""

    @property
    def detail(self) -> str:
        """The detail of the CANCELLED it ends a run with: the reason."""
        return self.reason or CANCELLED_DETAIL

    def covers(self, execution: ExecutionRequested) -> bool:
        """Whether ``execution`` is one it cancels."""
        if execution.job_id != self.job_id:
            return False
        return not self.up_to_epoch or execution.epoch <= self.up_to_epoch

    @property
    def key(self) -> bytes:
        return partition_key(self.job_id, self.workflow_id)

    def to_event(self) -> Event:
        return Event("CancelRequested", self)

    @classmethod
    def from_record(cls, record: CancelRequested) -> CancelRequest:
        """From a CancelRequested record."""
        return cls(**msgspec.structs.asdict(record))
