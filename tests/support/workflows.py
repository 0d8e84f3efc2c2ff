"""Workflow records as any producer would write them, for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.workflows.commands import workflow_event


def step(name: str, *parents: str, **fields: Any) -> dict[str, Any]:
    """A step of job type data.process unless told otherwise."""
    return {"name": name, "depends_on": list(parents), "job_type": "data.process", **fields}


def diamond(now_ms: int, workflow_id: str = "wf-diamond", **fields: Any) -> Event:
    """A -> B, A -> C, (B, C) -> D."""
    steps = [step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")]
    return workflow_event("tests", steps, now_ms=now_ms, workflow_id=workflow_id, **fields)


def step_ended(job_id: str, workflow_id: str, outcome: str, at_ms: int,
               result: str | None = None, owner: str = "tests") -> Event:  # fmt: skip
    return Event("StepEnded", {
        "job_id": job_id, "workflow_id": workflow_id, "owner": owner, "outcome": outcome,
        "ended_at_ms": at_ms,
        "result": result, "result_uri": None, "detail": None,
    })  # fmt: skip


def rebuilt(driver: ProcessorDriver[TimerState], timers: TimerProcessor,
            folder: Path) -> ProcessorDriver[TimerState]:  # fmt: skip
    """A second timer driver in ``folder`` whose partition 0 is restored from the changelog
    ``driver`` wrote, as a process with no local state would restore it; close it after."""
    store = PartitionStore(folder / "0")
    tx = PartitionBatch(store)
    for key, value in driver.changelog[0]:
        driver.processor.restore(tx, key, value)
    tx.commit(len(driver.changelog[0]) - 1)
    store.close()
    return ProcessorDriver(timers, folder, now_ms=driver.now_ms)
