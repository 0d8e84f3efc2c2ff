"""Maps and holders at the timers: jobs whose end waits for the jobs they started.

A *holder* is a job of a workflow that started *members* (pipeline/workflows/members.py):

- a ``map`` step (pipeline/model/held.py) starts one item per element of its ``over``
  parent's result, a JSON list, when it begins: every item's timer entry and step node in
  the transaction that begins it, the first ``max_concurrency`` scheduled and the rest held
  out of the schedule until an item ends and frees a slot. Once every item has ended the
  map ends too: SUCCEEDED (its result ``{"items": n}``), or, with ``on_item_failure: fail``,
  CANCELLED naming the first item that failed, the items not ended then cancelled. A step
  that depends on a map gets each item's result in its ``parent_results``, in item order,
  after the map's own (pipeline/timers/workflow.py).
- a job whose handler called ``ctx.spawn`` holds the children it spawned (their JobSubmitted
  carries its id in the ``jobstream.spawned_by`` label). Its own end, when its children
  still run, is kept (``own_outcome``): the steps that depend on it are released once the
  last child ends, as if it ended then, with the worst of its end and its children's.

A member's first end is counted once (a replayed StepEnded is recognised by its node), so
a map's slots and its end are exactly once, like everything in the timers' transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from jobstream._pipeline.model.held import MAX_MAP_ITEMS, NEVER_MS, Map, held_step
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.params import submission_fields
from jobstream._pipeline.model.records import JobCancelled, JobSubmitted, StepEnded, evolve
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.timers.entry import JobEntry
from jobstream._pipeline.timers.held import Finish
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import Cancel, Lifecycle
from jobstream._pipeline.workflows import StepNode, StepOutcome, run_outcome
from jobstream._pipeline.workflows.commands import STEP_LABEL
from jobstream._pipeline.workflows.members import item_job_id, item_step

K = LifecycleKind

Ended = Callable[[TimerState, StepEnded, str, int], list[Output]]
"""``(state, step ended, owner, now_ms) -> outputs``: a workflow job's end, applied."""


class Members:
    def __init__(self, lifecycle: Lifecycle, cancel: Cancel, finish: Finish) -> None:
        self.lifecycle = lifecycle
        self.cancel = cancel
        self.finish = finish
        self.ended: Ended | None = None
        """The workflow timers' step_ended: a spawner's dependents are released by it."""

    # -- a map begins ------------------------------------------------------------------

    def begin_map(self, state: TimerState, entry: JobEntry, mapped: Map,
                  now_ms: int) -> list[Output]:  # fmt: skip
        """Start the map's items, or end it at once: no items, or nothing to map."""
        job = entry.job
        workflow_id, owner = job.workflow_id or "", entry.owner
        node = state.nodes.get(owner, workflow_id, job.job_id)
        items, refusal = self._items(state, job, mapped)
        if node is None or refusal is not None:
            self.finish(state, entry, now_ms)
            return [self.lifecycle(K.CANCELLED, job, now_ms,
                                   detail=refusal or "not a step of its workflow")]  # fmt: skip
        if not items:
            self.finish(state, entry, now_ms)
            return [self.lifecycle(K.SUCCEEDED, job, now_ms, result='{"items": 0}',
                                   detail="nothing to map")]  # fmt: skip
        name = node.step or job.job_id
        window = min(mapped.max_concurrency, len(items))
        emits = []
        for index, item in enumerate(items):
            child = self._item(job, mapped, name, index, item, now_ms)
            state.nodes.put(StepNode(owner=owner, workflow_id=workflow_id,
                                     job_id=child.job_id, step=item_step(name, index),
                                     member_of=job.job_id))  # fmt: skip
            waits = index >= window
            state.put(JobEntry(timer_id=child.job_id, job=child, due_ms=now_ms, blocked=waits))
            kind = K.BLOCKED if waits else K.SCHEDULED
            emits.append(self.lifecycle(kind, child, now_ms, scheduled_at_ms=now_ms,
                                        waiting_for=[job.job_id] if waits else [],
                                        detail="waiting for a slot of its map" if waits else None,
                                        **submission_fields(child)))  # fmt: skip
        record = state.nodes.workflow(owner, workflow_id)
        if record is not None and record.steps and not record.schedule:
            state.nodes.put_workflow(record.evolve(steps=record.steps + len(items)))
        state.nodes.put(node.evolve(members=len(items), next_member=window))
        state.put(entry.evolve(waiting_since_ms=now_ms, due_ms=NEVER_MS))
        emits.append(self.lifecycle(K.WAITING, job, now_ms, detail=(
            f"mapping {len(items)} items of {mapped.over!r}, {window} at a time")))  # fmt: skip
        return emits

    @staticmethod
    def _items(state: TimerState, job: JobSubmitted,
               mapped: Map) -> tuple[list[Any], str | None]:  # fmt: skip
        """The list the map maps, or why there is none to map."""
        owner, workflow_id = job.spec.owner, job.workflow_id or ""
        for parent in job.spec.depends_on:
            node = state.nodes.get(owner, workflow_id, parent)
            if node is not None and node.step == mapped.over:
                break
        else:
            return [], f"map over {mapped.over!r}: no such parent"
        if node.result is None:
            stored = " (stored by URI: a map reads an inline result)" if node.result_uri else ""
            return [], f"map over {mapped.over!r}: its result is not a JSON list{stored}"
        try:
            items = orjson.loads(node.result)
        except orjson.JSONDecodeError:
            items = None
        if not isinstance(items, list):
            return [], f"map over {mapped.over!r}: its result is not a JSON list"
        if len(items) > MAX_MAP_ITEMS:
            return [], (f"map over {mapped.over!r}: {len(items)} items, more than "
                        f"{MAX_MAP_ITEMS}")  # fmt: skip
        return items, None

    @staticmethod
    def _item(job: JobSubmitted, mapped: Map, name: str, index: int, item: Any,
              now_ms: int) -> JobSubmitted:  # fmt: skip
        owner, workflow_id = job.spec.owner, job.workflow_id or ""
        params = orjson.dumps({**mapped.params, "item": item, "index": index}).decode()
        spec = evolve(job.spec, job_type=mapped.job_type, params=params, depends_on=[],
                      run_at_ms=None, labels={**job.spec.labels,
                                              STEP_LABEL: item_step(name, index)})  # fmt: skip
        return JobSubmitted(job_id=item_job_id(owner, workflow_id, name, index),
                            workflow_id=workflow_id, submitted_at_ms=now_ms, spec=spec)  # fmt: skip

    # -- a spawned child joins its holder ----------------------------------------------

    @staticmethod
    def joined(state: TimerState, job: JobSubmitted, holder_id: str) -> None:
        """A child ``ctx.spawn`` submitted: one more member its holder waits for."""
        owner, workflow_id = job.spec.owner, job.workflow_id or ""
        holder = state.nodes.get(owner, workflow_id, holder_id)
        child = state.nodes.get(owner, workflow_id, job.job_id)
        if holder is None or child is None or holder.outcome is not None:
            return  # a holder that has ended (or is unknown here) waits for nothing more
        state.nodes.put(child.evolve(member_of=holder_id))
        state.nodes.put(holder.evolve(members=holder.members + 1))

    # -- a member ends -----------------------------------------------------------------

    def member_ended(self, state: TimerState, member: StepNode, outcome: StepOutcome,
                     now_ms: int) -> list[Output]:  # fmt: skip
        """Count a member's first end at its holder: start the next item of a map, and end
        a holder whose last member this was."""
        owner, workflow_id = member.owner, member.workflow_id
        holder = state.nodes.get(owner, workflow_id, member.member_of or "")
        if holder is None or holder.outcome is not None:
            return []
        failed = outcome != StepOutcome.SUCCEEDED
        first_failure = failed and holder.member_failure is None
        holder = holder.evolve(
            members_ended=holder.members_ended + 1,
            member_outcome=run_outcome(holder.member_outcome, outcome),
            member_failure=holder.member_failure or (
                f"item {member.step or member.job_id} ended {outcome}" if failed else None),
        )  # fmt: skip
        entry = state.get(holder.job_id)
        is_map = isinstance(entry, JobEntry) and entry.waiting_since_ms is not None
        emits: list[Output] = []
        if is_map and first_failure and isinstance(entry, JobEntry) and self._fail_fast(entry):
            emits.extend(self._cancel_rest(state, holder, now_ms))
            holder = holder.evolve(next_member=holder.members)
        elif is_map and holder.next_member < holder.members:
            emits.extend(self._start_next(state, holder, now_ms))
            holder = holder.evolve(next_member=holder.next_member + 1)
        state.nodes.put(holder)
        if holder.members_ended < holder.members:
            return emits
        if is_map:
            assert isinstance(entry, JobEntry)
            return emits + self._map_ended(state, entry, holder, now_ms)
        if holder.own_outcome is not None and self.ended is not None:  # a spawner's run ended
            worst = run_outcome(holder.own_outcome, holder.member_outcome or outcome)
            end = StepEnded(job_id=holder.job_id, workflow_id=workflow_id, owner=owner,
                            outcome=worst, ended_at_ms=now_ms, result=holder.result,
                            result_uri=holder.result_uri,
                            detail="its spawned children have ended")  # fmt: skip
            emits.extend(self.ended(state, end, owner, now_ms))
        return emits

    @staticmethod
    def _fail_fast(entry: JobEntry) -> bool:
        mapped = held_step(entry.spec)
        return isinstance(mapped, Map) and mapped.fail_fast

    def _start_next(self, state: TimerState, holder: StepNode, now_ms: int) -> list[Output]:
        job_id = item_job_id(holder.owner, holder.workflow_id, holder.step or holder.job_id,
                             holder.next_member)  # fmt: skip
        entry = state.get(job_id)
        if not isinstance(entry, JobEntry) or not entry.blocked:
            return []  # cancelled while it waited
        state.put(entry.evolve(blocked=False, due_ms=now_ms))
        return [self.lifecycle(K.SCHEDULED, entry.job, now_ms, scheduled_at_ms=now_ms,
                               detail="a slot of its map is free")]  # fmt: skip

    def cancel_items(self, state: TimerState, entry: JobEntry, now_ms: int) -> list[Output]:
        """A map cancelled while its items run: cancel the items not ended, and start no
        more (each one's end is still counted, and the last ends the map's waiting)."""
        workflow_id = entry.job.workflow_id
        holder = None if workflow_id is None else state.nodes.get(entry.owner, workflow_id,
                                                                  entry.job_id)  # fmt: skip
        if holder is None or not holder.next_member:
            return []  # not a map (a wait, a sleep), or one that started nothing
        state.nodes.put(holder.evolve(next_member=holder.members))
        return self._cancel_rest(state, holder, now_ms, "its map was cancelled")

    def _cancel_rest(self, state: TimerState, holder: StepNode, now_ms: int,
                     reason: str | None = None) -> list[Output]:  # fmt: skip
        emits: list[Output] = []
        reason = reason or f"map cancelled: {holder.member_failure}"
        name = holder.step or holder.job_id
        for index in range(holder.members):
            job_id = item_job_id(holder.owner, holder.workflow_id, name, index)
            item = state.nodes.get(holder.owner, holder.workflow_id, job_id)
            if item is not None and item.outcome is None:
                emits.extend(self.cancel(state, JobCancelled(
                    job_id=job_id, workflow_id=holder.workflow_id, requested_at_ms=now_ms,
                    reason=reason), now_ms))  # fmt: skip
        return emits

    def _map_ended(self, state: TimerState, entry: JobEntry, holder: StepNode,
                   now_ms: int) -> list[Output]:  # fmt: skip
        self.finish(state, entry, now_ms)
        if holder.member_failure is not None and self._fail_fast(entry):
            return [self.lifecycle(K.CANCELLED, entry.job, now_ms,
                                   detail=f"map failed: {holder.member_failure}")]  # fmt: skip
        result = orjson.dumps({"items": holder.members}).decode()
        detail = f"every one of its {holder.members} items ended"
        return [self.lifecycle(K.SUCCEEDED, entry.job, now_ms, result=result, detail=detail)]
