"""Jobs this API accepted that its views have not read yet.

A client that submits and then asks for its job at once must see it, never a 404: the
record is on jobs.intake but the view updater may not have folded it. The API keeps what
it accepted here until the views hold the job or ``ttl_s`` passes, whichever is first; at
most ``capacity`` jobs, the oldest dropped first. It keeps the JobSubmitted record and
makes the SUBMITTED document of it only when asked: most jobs of a batch are never asked
for before the views have them, and making a thousand documents per request cost the API
a sixth of its CPU.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from jobstream._connectors.api.feed import Doc
from jobstream._connectors.views.fold import apply_submitted
from jobstream._pipeline.model.records import JobSubmitted


class Pending:
    def __init__(self, *, ttl_s: float = 600.0, capacity: int = 100_000) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._held: OrderedDict[str, tuple[float, JobSubmitted]] = OrderedDict()

    def add(self, submitted: JobSubmitted) -> None:
        """Hold a JobSubmitted record just sent."""
        job_id = submitted.job_id
        self._held[job_id] = (time.monotonic() + self.ttl_s, submitted)
        self._held.move_to_end(job_id)
        while len(self._held) > self.capacity:
            self._held.popitem(last=False)

    def get(self, job_id: str) -> Doc | None:
        """The SUBMITTED document of a job held, or None."""
        held = self._held.get(job_id)
        if held is None:
            return None
        if held[0] < time.monotonic():
            del self._held[job_id]
            return None
        return apply_submitted(None, held[1])

    def discard(self, job_id: str) -> None:
        self._held.pop(job_id, None)

    def __len__(self) -> int:
        return len(self._held)
