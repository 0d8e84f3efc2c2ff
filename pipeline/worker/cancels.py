"""The cancels a worker knows of: which executions it must not start, or must stop.

Filled from jobs.control (pipeline/worker/control.py) and asked about every record before
it starts and every run when a cancel arrives. Keyed by job id; a job cancelled twice
keeps the request that covers more (the later ``up_to_epoch``). A request is kept for
``ttl_ms`` after it was asked for, the retention of jobs.control: a worker starting now
reads that far back, so both learn of the same cancels. At most ``limit`` are kept, the
oldest dropped first, so a flood of cancels costs bounded memory.

Pure: the clock is an argument.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.topics import CONTROL_RETENTION_MS

DEFAULT_LIMIT = 100_000
"""Cancels kept at most (a few megabytes): far more than a day of them at any real rate."""


class CancelSet:
    def __init__(self, ttl_ms: int = CONTROL_RETENTION_MS, limit: int = DEFAULT_LIMIT) -> None:
        if ttl_ms <= 0 or limit < 1:
            raise ValueError("ttl_ms must be positive and limit at least 1")
        self.ttl_ms, self.limit = ttl_ms, limit
        self._requests: OrderedDict[str, CancelRequest] = OrderedDict()
        """By job id, in the order they were asked for (as near as they arrive in)."""

    def add(self, request: CancelRequest, now_ms: int) -> bool:
        """Keep ``request`` unless it has expired or a kept one covers as much; True if kept."""
        if self._expired(request, now_ms):
            return False
        held = self._requests.get(request.job_id)
        if held is not None and _covers_all(held, request):
            return False
        self._requests[request.job_id] = request
        self._requests.move_to_end(request.job_id)
        while len(self._requests) > self.limit:
            self._requests.popitem(last=False)
        return True

    def match(self, execution: ExecutionRequested) -> CancelRequest | None:
        """The cancel that covers ``execution``, if any."""
        request = self._requests.get(execution.job_id)
        return request if request is not None and request.covers(execution) else None

    def expire(self, now_ms: int) -> int:
        """Drop the cancels older than the TTL; how many went."""
        gone = 0
        while self._requests:
            job_id, oldest = next(iter(self._requests.items()))
            if not self._expired(oldest, now_ms):
                break
            del self._requests[job_id]
            gone += 1
        return gone

    def _expired(self, request: CancelRequest, now_ms: int) -> bool:
        return request.requested_at_ms + self.ttl_ms <= now_ms

    def __len__(self) -> int:
        return len(self._requests)

    def __iter__(self) -> Iterator[CancelRequest]:
        return iter(self._requests.values())


def _covers_all(held: CancelRequest, new: CancelRequest) -> bool:
    """Whether ``held`` cancels every execution ``new`` does (0 is every execution)."""
    if not held.up_to_epoch:
        return True
    return bool(new.up_to_epoch) and new.up_to_epoch <= held.up_to_epoch
