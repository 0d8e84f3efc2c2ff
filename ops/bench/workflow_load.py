"""The workflow scenarios of ``jobstream bench``: what they submit and what they measure.

- ``fanout``: one parent and ``n`` children that depend on it, one workflow. The parent
  goes first, then the children job by job (a JobSubmitted with ``depends_on``): a
  WorkflowSubmitted holds at most 10,000 steps, and 10,001 are wanted. Every child is
  BLOCKED at the timers before the parent falls due.
- ``diamonds``: ``n`` workflows A -> B, A -> C, (B, C) -> D, each one WorkflowSubmitted;
  the roots fall due 10 ms apart.

*Release lateness*: a child's first STARTED (the worker's clock) minus the last SUCCEEDED
of its parents (the worker's clock when that parent's outcome was decided), from
jobs.events. Its parts: up to the child's SCHEDULED at the timers (*released*: the
parent's outcome committed by the worker, folded by the status processor, its StepEnded
committed and read by the timers), then to its FIRED (the timers' tick), then to STARTED
(the timers' commit, the worker's fetch). ops/bench/release_hops.py splits it further, at
each record's commit.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobstream._ops.bench.load import Load
from jobstream._ops.bench.measure import summarize
from jobstream._ops.bench.release_hops import release_hops, step_ended_logged
from jobstream._ops.bench.submitter import OWNER, Submitter
from jobstream._pipeline.clock import instant_of, now_ms
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.workflows.commands import step_ids, workflow_event

DIAMOND_SPACING_MS = 10
"""Diamond i's root falls due at the first due time + i * this."""
DIAMONDS_PER_BATCH = 200


def fanout_load(children: int, lead_s: float | None) -> Load:
    """One parent and its children; all are submitted before the parent is due."""
    return Load("fanout", [0] * (children + 1), lead_s or 10 + children / 2000, paced=False)


def diamonds_load(count: int, lead_s: float | None) -> Load:
    """Four jobs per diamond; the offsets are the roots' due times (children follow)."""
    offsets = sorted(DIAMOND_SPACING_MS * (i // 4) for i in range(4 * count))
    return Load("diamonds", offsets, lead_s or 10 + count / 200, paced=False)


class WorkflowSubmitter(Submitter):
    """Submits a workflow scenario's jobs; keeps each child's parents for the tally."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parents: dict[str, list[str]] = {}

    def run(self) -> None:
        started = time.perf_counter()
        try:
            with JobClient(self.settings) as client:
                if self.load.scenario == "fanout":
                    self._fanout(client, len(self.load.offsets_ms) - 1)
                else:
                    self._diamonds(client, len(self.load.offsets_ms) // 4)
        except BaseException as exc:  # reported by the run, which stops on it
            self.error = exc
        self.seconds = time.perf_counter() - started

    def _fanout(self, client: JobClient, children: int) -> None:
        workflow_id = new_job_id(now_ms())
        [parent] = client.submit_many([JobRequest(
            job_type=self.job_type, owner=OWNER, workflow_id=workflow_id,
            run_at=instant_of(self.t0_ms))])  # fmt: skip
        self.ids.append(parent)
        self.on_progress(1)
        for first in range(0, children, 10_000):
            batch = [JobRequest(job_type=self.job_type, owner=OWNER, workflow_id=workflow_id,
                                depends_on=(parent,))
                     for _ in range(first, min(children, first + 10_000))]  # fmt: skip
            ids = client.submit_many(batch)
            self.ids.extend(ids)
            self.parents.update((child, [parent]) for child in ids)
            self.on_progress(len(ids))

    def _diamonds(self, client: JobClient, count: int) -> None:
        for first in range(0, count, DIAMONDS_PER_BATCH):
            if self.halt.is_set():
                return
            upto = min(count, first + DIAMONDS_PER_BATCH)
            events = [workflow_event(OWNER, diamond(self.job_type, self.t0_ms + DIAMOND_SPACING_MS
                                                    * i), now_ms=now_ms())
                      for i in range(first, upto)]  # fmt: skip
            client.submit_workflows(events)
            for event in events:
                ids = step_ids(event)
                self.ids.extend(ids.values())
                self.parents.update({ids["b"]: [ids["a"]], ids["c"]: [ids["a"]],
                                     ids["d"]: [ids["b"], ids["c"]]})  # fmt: skip
            self.on_progress(4 * (upto - first))

    def extra(self, events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        events = list(events)
        return release_lateness(self.parents, events) | release_hops(
            self.parents, events, step_ended_logged(self.settings)
        )


def diamond(job_type: str, root_due_ms: int) -> list[dict[str, Any]]:
    """The steps of one diamond, its root due at ``root_due_ms``."""

    def step(name: str, *parents: str) -> dict[str, Any]:
        return {"name": name, "depends_on": list(parents), "job_type": job_type}

    return [{**step("a"), "run_at": instant_of(root_due_ms)}, step("b", "a"), step("c", "a"),
            step("d", "b", "c")]  # fmt: skip


def release_lateness(parents: Mapping[str, Sequence[str]],
                     events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Release lateness of every child that started, from its JobLifecycle events.

    A child counts when it and all its parents have the events needed: its first STARTED
    (or FIRED) and each parent's last SUCCEEDED.
    """
    succeeded: dict[str, int] = {}
    started: dict[str, int] = {}
    fired: dict[str, int] = {}
    scheduled: dict[str, int] = {}
    for event in events:
        job_id, kind, at = str(event["job_id"]), event["kind"], int(event["at_ms"])
        if kind == "SUCCEEDED":
            succeeded[job_id] = max(at, succeeded.get(job_id, at))
        elif kind == "STARTED":
            started[job_id] = min(at, started.get(job_id, at))
        elif kind == "FIRED":
            fired[job_id] = min(at, fired.get(job_id, at))
        elif kind == "SCHEDULED":
            scheduled[job_id] = max(at, scheduled.get(job_id, at))
    start_lateness, fire_lateness, release = [], [], []
    for child, its_parents in parents.items():
        if not all(p in succeeded for p in its_parents):
            continue
        released = max(succeeded[p] for p in its_parents)
        if child in started:
            start_lateness.append(started[child] - released)
        if child in fired:
            fire_lateness.append(fired[child] - released)
        if child in scheduled:
            release.append(scheduled[child] - released)
    return {
        "children": len(parents),
        "children_started": len(start_lateness),
        "release_lateness_ms": summarize(start_lateness),
        "release_fire_lateness_ms": summarize(fire_lateness),
        "release_scheduled_lateness_ms": summarize(release),
    }
