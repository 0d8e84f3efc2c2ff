"""A run's log lines read back from jobs.logs, where the views say they are.

The views keep, per execution, the (partition, offset) of its record on jobs.logs
(connectors/views/layout.py, ``g``), and the record is read at that offset, as a result is
from jobs.results (results.py). The record read must be the job's (its key) and the run's
(its ``execution-id`` header): an offset past the topic's retention reads as nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobstream._connectors.views.query import logs_location
from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.kafka.scan import read_at
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.results import EXECUTION_HEADER
from jobstream._pipeline.worker.runlogs import DROPPED_HEADER, decode_lines


@dataclass(frozen=True, slots=True)
class StoredLogs:
    """A run's log lines as jobs.logs holds them."""

    lines: list[dict[str, Any]]
    dropped: int
    """Lines past the worker's bounds, not kept."""


def read_logs(settings: Settings, store: ViewStore, job_id: str, execution_id: str, *,
              timeout_s: float = 10.0) -> StoredLogs | None:  # fmt: skip
    """The log lines of ``execution_id``; None when the views know of none (the run has
    not ended, or they have not read its record yet) or the topic no longer holds them."""
    location = logs_location(store, job_id, execution_id)
    if location is None:
        return None
    message = read_at(settings, Topics(settings).logs, *location, timeout_s=timeout_s)
    if message is None or message.key() != job_id.encode():
        return None
    headers = message.headers()
    if header(headers, EXECUTION_HEADER) != execution_id:
        return None
    dropped = header(headers, DROPPED_HEADER) or "0"
    return StoredLogs(decode_lines(message.value() or b""),
                      int(dropped) if dropped.isdigit() else 0)  # fmt: skip
