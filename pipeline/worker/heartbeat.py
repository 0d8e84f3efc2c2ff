"""A worker's health on jobs.workers: who it is, what it serves, what runs right now.

jobs.workers is compacted and keyed by worker id, so the topic always holds each
worker's latest WorkerHeartbeat: a dashboard reads "who is alive" without a registry.
States: STARTING (before its consumers join their groups), RUNNING, DRAINING (after
SIGTERM: no new work, in-flight jobs finishing), STOPPED (its last record). A worker that
dies without STOPPED is recognised by the age of its last ``at_ms``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from jobstream._pipeline.model.records import Event, WorkerHeartbeat, WorkerState

STARTING, RUNNING, DRAINING, STOPPED = (WorkerState.STARTING, WorkerState.RUNNING,
                                        WorkerState.DRAINING, WorkerState.STOPPED)  # fmt: skip


def default_worker_id() -> str:
    """``<hostname>-<pid>``: unique among live processes, readable in a dashboard."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class WorkerIdentity:
    worker_id: str
    job_types: tuple[str, ...]
    capacity: int
    started_at_ms: int
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    pool: str | None = None
    """The pool it serves; None: the jobs that require no pool."""

    def record(self, state: WorkerState, running: Iterable[str], now_ms: int) -> Event:
        """The WorkerHeartbeat for this instant."""
        return Event.of(WorkerHeartbeat(
            worker_id=self.worker_id, host=self.host, pid=self.pid,
            job_types=list(self.job_types), capacity=self.capacity,
            running=sorted(running), state=state,
            started_at_ms=self.started_at_ms, at_ms=now_ms, pool=self.pool,
        ))  # fmt: skip
