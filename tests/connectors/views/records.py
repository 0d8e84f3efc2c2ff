"""Records as the topics carry them, decoded, for folding into views in tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.records import JobLifecycle, JobSubmitted
from jobstream._pipeline.serde import JobStatus

T0 = 1_767_225_600_000  # 2026-01-01


def submitted(owner: str = "acme", job_type: str = "data.process", *, at_ms: int,
              labels: dict[str, str] | None = None, **fields: Any) -> JobSubmitted:  # fmt: skip
    request = JobRequest(job_type=job_type, owner=owner, labels=labels or {}, **fields)
    return as_submitted(request.to_event(at_ms).data)


def as_submitted(data: Any) -> JobSubmitted:
    """A JobSubmitted record of its fields (records among them), or the record itself."""
    if isinstance(data, JobSubmitted):
        return data
    return msgspec.convert(data, JobSubmitted, from_attributes=True)


Job = JobSubmitted | Mapping[str, Any]
"""A submission, or the fields of one a test spells out (those read below): both read by
field name."""


def status(record: Job, state: str, *, at_ms: int, **fields: Any) -> JobStatus:
    spec = record["spec"]
    return JobStatus(job_id=record["job_id"], job_type=spec["job_type"], owner=spec["owner"],
                     state=state, updated_at_ms=at_ms, **fields)  # fmt: skip


def event(record: Job, kind: str, *, at_ms: int, attempt: int = 1,
          due_ms: int | None = None, **fields: Any) -> JobLifecycle:  # fmt: skip
    spec, job_id = record["spec"], record["job_id"]
    fire = record["submitted_at_ms"] if due_ms is None else due_ms
    return msgspec.convert({
        "kind": kind, "job_id": job_id, "workflow_id": None, "at_ms": at_ms,
        "job_type": spec["job_type"], "owner": spec["owner"], "attempt": attempt, "epoch": fire,
        "execution_id": f"{job_id}:{fire}:{attempt}", "worker_id": None,
        "scheduled_at_ms": None, "lateness_ms": None, "error": None, "result": None,
        "result_uri": None, "detail": None, "execution": None, **fields,
    }, JobLifecycle, from_attributes=True)  # fmt: skip


def fold(store: ViewStore, *records: JobSubmitted | JobLifecycle | JobStatus) -> None:
    """Fold ``records`` into ``store`` in one batch: submissions, events and statuses."""
    batch = store.batch()
    for record in records:
        if isinstance(record, JobSubmitted):
            batch.submitted(record)
        elif isinstance(record, JobLifecycle):
            batch.event(record)
        else:
            batch.status(record)
    batch.commit()
