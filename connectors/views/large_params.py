"""Parameters too large for the views, read back from the job's submission on jobs.intake.

The views keep parameters up to :data:`jobstream._connectors.views.fold.PARAMS_INLINE_BYTES`; for
larger ones they keep where the submission is (partition and offset), and jobs.intake
holds the parameters for its retention. The text read back is checked against the digest
the views hold, so what is served is what was submitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobstream._connectors.views.query import params_location
from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError, ValidationError
from jobstream._pipeline.kafka.scan import read_at
from jobstream._pipeline.model.params import params_digest
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.commands import expand_workflow

_, _DESERIALIZE = make_serde()


def read_large_params(settings: Settings, store: ViewStore, doc: Mapping[str, Any], *,
                      timeout_s: float = 10.0) -> bytes | None:  # fmt: skip
    """The parameters' JSON text of the job ``doc``, from jobs.intake; None when the views
    know no location, the topic no longer holds the record, or it does not match."""
    location = params_location(store, doc["job_id"])
    if location is None:
        return None
    partition, offset = location
    message = read_at(settings, Topics(settings).intake, partition, offset, timeout_s=timeout_s)
    value = None if message is None else message.value()
    if not value:
        return None
    text = _params_of(value, doc["job_id"])
    if text is None or params_digest(text) != doc.get("params_sha256"):
        return None
    return text


def _params_of(value: bytes, job_id: str) -> bytes | None:
    try:
        event = _DESERIALIZE(value)
        if event.name == "JobSubmitted":
            jobs: list[JobSubmitted] = [event.data]
        elif event.name == "WorkflowSubmitted":
            jobs = [job for _, job in expand_workflow(event.data, now_ms=now_ms())]
        else:
            return None
    except (DeserializationError, ValidationError):
        return None
    for job in jobs:
        if job.job_id == job_id:
            return (job.spec.params or "{}").encode()
    return None
