"""The workflow scenario: waits, sleeps and maps under load while the timers and a worker die.

Beside the run's load, :func:`workflows_under_kills` submits :data:`WORKFLOWS` workflows
of the same shape::

    list (emits 0..n-1) ──► map (one item per element, MAP_CONCURRENCY at a time) ──┐
    gate (waits for the signal "go") ─────────────────────────────────────────────────┼──► join
    nap (sleeps NAP) ─────────────────────────────────────────────────────────────────┘

then SIGKILLs the timers while the maps run (started again 2 s later), sends "go" to each
workflow, and SIGKILLs the worker that finishes a run next (started again 2 s later).
Every step and every item must end as the load's jobs must (none lost, none run twice
unflagged), and each join checks it got every item's result once, in order (ops/faults/
app.py): a join that did not ends DEAD_LETTERED, which the scenario's check counts.
"""

from __future__ import annotations

import time
from typing import Any

from jobstream._ops.faults.app import EMIT, JOB_TYPE, JOIN
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.workflows.members import item_job_id

WORKFLOWS = 3
MAP_CONCURRENCY = 20
NAP = "2s"
OWNER = "faults-workflows"
SIGNAL = "go"
MAP_STARTED_TIMEOUT_S = 60.0


def steps(items: int) -> list[dict[str, Any]]:
    return [
        {"name": "list", "job_type": JOB_TYPE, "params": {EMIT: items}},
        {"name": "map", "depends_on": ["list"],
         "map": {"over": "list", "job_type": JOB_TYPE, "max_concurrency": MAP_CONCURRENCY}},
        {"name": "gate", "wait": {"signal": SIGNAL, "timeout": "10m"}},
        {"name": "nap", "sleep": {"for": NAP}},
        {"name": "join", "depends_on": ["map", "gate", "nap"], "job_type": JOB_TYPE,
         "params": {JOIN: "map", "items": items}},
    ]  # fmt: skip


def submit(client: JobClient, prefix: str, items: int) -> tuple[list[str], dict[str, int]]:
    """The workflows' ids, and every job they will hold (steps and items) -> submitted at."""
    workflow_ids, jobs = [], {}
    for n in range(WORKFLOWS):
        submitted = client.submit_workflow(steps(items), owner=OWNER,
                                           workflow_id=f"{prefix}wf-{n}")  # fmt: skip
        at = now_ms()
        workflow_ids.append(submitted.workflow_id)
        jobs.update(dict.fromkeys(submitted.steps.values(), at))
        jobs.update({item_job_id(OWNER, submitted.workflow_id, "map", i): at
                     for i in range(items)})  # fmt: skip
    return workflow_ids, jobs


def wait_started(started: Any, timeout_s: float = MAP_STARTED_TIMEOUT_S) -> bool:
    """Wait until ``started()`` holds (some items of the maps have run)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if started():
            return True
        time.sleep(0.1)
    return False
