"""Records as the topics carry them, decoded, for folding into views in tests."""

from __future__ import annotations

from typing import Any

from connectors.views.store import ViewStore
from pipeline.model.job import JobRequest
from pipeline.serde import JobStatus


def submitted(owner: str = "acme", job_type: str = "data.process", *, at_ms: int,
              labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:  # fmt: skip
    request = JobRequest(job_type=job_type, owner=owner, labels=labels or {}, **fields)
    return request.to_event(at_ms).data


def status(record: dict[str, Any], state: str, *, at_ms: int, **fields: Any) -> JobStatus:
    spec = record["spec"]
    return JobStatus(job_id=record["job_id"], job_type=spec["job_type"], owner=spec["owner"],
                     state=state, updated_at_ms=at_ms, **fields)  # fmt: skip


def event(record: dict[str, Any], kind: str, *, at_ms: int, attempt: int = 1,
          fire_ms: int | None = None, **fields: Any) -> dict[str, Any]:  # fmt: skip
    spec = record["spec"]
    fire = record["submitted_at_ms"] if fire_ms is None else fire_ms
    return {
        "kind": kind, "job_id": record["job_id"], "workflow_id": None, "at_ms": at_ms,
        "job_type": spec["job_type"], "owner": spec["owner"], "attempt": attempt, "epoch": fire,
        "execution_id": f"{record['job_id']}:{fire}:{attempt}", "worker_id": None,
        "scheduled_at_ms": None, "lateness_ms": None, "error": None, "result": None,
        "result_uri": None, "detail": None, "execution": None, **fields,
    }  # fmt: skip


def fold(store: ViewStore, *records: Any) -> None:
    """Fold ``records`` into ``store`` in one batch: a submission (a dict with a spec), an
    event (any other dict) or a status."""
    batch = store.batch()
    for record in records:
        if isinstance(record, dict) and "spec" in record:
            batch.submitted(record)
        elif isinstance(record, dict):
            batch.event(record)
        else:
            batch.status(record)
    batch.commit()
