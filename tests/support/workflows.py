"""Workflow records as any producer would write them, for tests."""

from __future__ import annotations

from typing import Any

from pipeline.jobs.workflow import workflow_event
from pipeline.serde import Event


def step(name: str, *parents: str, **fields: Any) -> dict[str, Any]:
    """A step of job type data.process unless told otherwise."""
    return {"name": name, "depends_on": list(parents), "job_type": "data.process", **fields}


def diamond(now_ms: int, workflow_id: str = "wf-diamond", **fields: Any) -> Event:
    """A -> B, A -> C, (B, C) -> D."""
    steps = [step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")]
    return workflow_event("tests", steps, now_ms=now_ms, workflow_id=workflow_id, **fields)


def step_ended(job_id: str, workflow_id: str, outcome: str, at_ms: int,
               result: str | None = None) -> Event:  # fmt: skip
    return Event("StepEnded", {
        "job_id": job_id, "workflow_id": workflow_id, "outcome": outcome, "ended_at_ms": at_ms,
        "result": result, "result_uri": None, "detail": None,
    })  # fmt: skip
