"""Jobs this API accepted that its views have not read yet.

A client that submits and then asks for its job at once must see it, never a 404: the
record is on jobs.intake but the view updater may not have folded it. The API keeps what
it accepted here, as a SUBMITTED document, until the views hold the job or ``ttl_s``
passes, whichever is first; at most ``capacity`` jobs, the oldest dropped first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any


class Pending:
    def __init__(self, *, ttl_s: float = 600.0, capacity: int = 100_000) -> None:
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._docs: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    def add(self, doc: dict[str, Any]) -> None:
        self._docs[doc["job_id"]] = (time.monotonic() + self.ttl_s, doc)
        self._docs.move_to_end(doc["job_id"])
        while len(self._docs) > self.capacity:
            self._docs.popitem(last=False)

    def get(self, job_id: str) -> dict[str, Any] | None:
        held = self._docs.get(job_id)
        if held is None:
            return None
        if held[0] < time.monotonic():
            del self._docs[job_id]
            return None
        return held[1]

    def discard(self, job_id: str) -> None:
        self._docs.pop(job_id, None)

    def __len__(self) -> int:
        return len(self._docs)
