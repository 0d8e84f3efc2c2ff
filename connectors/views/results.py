"""Results read back from jobs.results, where the views say each one is.

Kafka cannot look a record up by key, so the views keep, per job, the (partition,
offset) of its latest result and of each execution's (connectors/views/layout.py, ``z``
and ``Z``), and a result is read at its offset, as large parameters are from jobs.intake
(large_params.py). The record read must be the job's (its key) and the run's (its
``execution-id`` header): an offset the topic no longer holds, compacted away by a later
run of the job or past its retention, reads as nothing rather than as another result.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobstream._connectors.views.query import result_location
from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.kafka.scan import read_at
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.results import CONTENT_TYPE_HEADER, EXECUTION_HEADER, OCTET_STREAM


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A run's result as jobs.results holds it."""

    body: bytes
    content_type: str
    execution_id: str | None


def read_result(settings: Settings, store: ViewStore, job_id: str,
                execution_id: str | None = None, *,
                timeout_s: float = 10.0) -> StoredResult | None:  # fmt: skip
    """The job's latest result (or ``execution_id``'s); None when the views know of none
    or the topic no longer holds it."""
    location = result_location(store, job_id, execution_id)
    if location is None:
        return None
    partition, offset = location
    message = read_at(settings, Topics(settings).results, partition, offset,
                      timeout_s=timeout_s)  # fmt: skip
    if message is None or message.key() != job_id.encode():
        return None
    headers = message.headers()
    ran = header(headers, EXECUTION_HEADER)
    if execution_id is not None and ran != execution_id:
        return None
    return StoredResult(message.value() or b"",
                        header(headers, CONTENT_TYPE_HEADER) or OCTET_STREAM, ran)  # fmt: skip
