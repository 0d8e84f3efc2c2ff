"""Workflows at the timers: a child is held out of the schedule until its parents succeed.

A workflow is its owner's: its state is kept under owner and id, so two owners' workflows
of one name are two workflows, and a job names as parents only jobs of its own owner's
workflow. All jobs of a workflow share its partition (the workflow id is their key), so the timer
processor of that partition sees every submission of the workflow and, through
:class:`StepEnded` commands from the status processor, every end of one of its jobs. It
keeps a :class:`~jobstream._pipeline.workflows.StepNode` per job (pipeline/timers/nodes.py) and:

- on a submission, refuses a parent it does not know in the workflow, and holds a child
  whose parents have not all succeeded: its timer entry is ``blocked`` (no schedule key)
  and BLOCKED goes to jobs.events with the parents it waits for;
- on a StepEnded, records the outcome and result, then applies the release rules
  (pipeline/workflows/release.py) to each child still waiting for that parent: RUN puts
  it in the schedule at the later of its own time and now, CANCEL cancels it naming the
  parent, WAIT emits BLOCKED again with the parents left;
- at a firing, gives the execution its parents' results;
- on a WorkflowCancelled, cancels every job of the workflow that has not ended, those
  under way through jobs.control as a job's cancel does;
- counts the steps of a workflow submitted as one unit that have ended: once all have,
  it forgets their nodes (the workflow record stays as long as a job's idempotency
  marker, so a resubmission is still a no-op) and, for a run of a recurring workflow,
  tells the schedule's partition with a StepEnded of the run;
- keeps a recurring workflow's schedule as a timer entry of kind ``workflow`` whose firing
  submits a new run (pipeline/workflows/runs.py) to jobs.intake, unless its overlap policy
  says the previous run must end first.

Everything happens in the processor's transaction: the release, the changelog of the
nodes and the firing it allows commit together with the input offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import (
    JobCancelled,
    JobSubmitted,
    ParentResultRecord,
    StepEnded,
    WorkflowCancelled,
    WorkflowSubmitted,
)
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.scheduling import CronSpec, next_due_ms
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.entry import (
    ENDED_PREFIX,
    JobEntry,
    Marker,
    MarkerEntry,
    RecurringWorkflow,
    ScheduleEntry,
    ScheduleSpec,
    ended_timer_id,
    schedule_timer_id,
)
from jobstream._pipeline.timers.state import TimerState

if TYPE_CHECKING:
    from jobstream._pipeline.timers.maps import Members
from jobstream._pipeline.workflows import (
    Gate,
    GateAction,
    StepNode,
    StepOutcome,
    WorkflowRecord,
    admit,
    after_parent_ended,
    may_start,
    run_outcome,
    run_record,
    run_workflow_id,
)
from jobstream._pipeline.workflows.members import item_job_id

log = logging.getLogger(__name__)

K = LifecycleKind

PARENT_RESULTS_INLINE_BYTES = 1_000_000
"""Bytes of parent results an execution carries at most (inline results, and each
record's ids): past it a parent's inline result is left out (its outcome and result URI
stay) and a map's further items too, so a wide fan-in fits in one record."""

Lifecycle = Callable[..., Output]
"""``(kind, job, now_ms, **fields) -> Output``: a JobLifecycle of a job on jobs.events."""
Cancel = Callable[[TimerState, JobCancelled, int], list[Output]]
"""``(state, command, now_ms) -> outputs``: the timers' cancel of one job."""


class WorkflowTimers:
    def __init__(self, lifecycle: Lifecycle, cancel: Cancel, intake: str,
                 record_ttl_ms: int) -> None:  # fmt: skip
        self.lifecycle = lifecycle
        self.cancel = cancel
        self.intake = intake
        """jobs.intake: where runs of recurring workflows and their ends are sent."""
        self.record_ttl_ms = record_ttl_ms
        """How long an ended workflow's record keeps a resubmission of it a no-op."""
        self.unknown_ends = 0
        """StepEnded of jobs this partition keeps no node for (purged, or never seen)."""
        self.runs_skipped = 0
        """Times of recurring workflows that started no run: the previous one still ran."""
        self.members: Members | None = None
        """Maps and spawners: jobs whose end waits for their members (pipeline/timers/maps.py)."""

    # -- submissions ---------------------------------------------------------------------

    @staticmethod
    def known(state: TimerState, job: JobSubmitted, workflow_id: str) -> bool:
        """Whether the job is already a step of its workflow ``workflow_id`` (a resubmission)."""
        return state.nodes.get(job.spec.owner, workflow_id, job.job_id) is not None

    def admit(self, state: TimerState, job: JobSubmitted, workflow_id: str,
              step: str | None) -> Gate:  # fmt: skip
        """Record the job as a step of its workflow ``workflow_id`` and tell whether it may run.

        Raises ValidationError, before anything is written, for a parent that is not a
        job of the workflow and for a workflow that was cancelled.
        """
        owner = job.spec.owner
        parents = list(job.spec.depends_on)
        record = state.nodes.workflow(owner, workflow_id)
        if record is not None and record.cancelled:
            raise ValidationError("workflow_id", f"workflow {workflow_id} was cancelled")
        outcomes: dict[str, str | None] = {}
        for i, parent in enumerate(parents):
            node = state.nodes.get(owner, workflow_id, parent)
            if node is None:
                raise ValidationError(f"spec.depends_on.{i}", f"{parent} is not a job of "
                                      f"{owner}'s workflow {workflow_id}")  # fmt: skip
            outcomes[parent] = node.outcome
        gate = admit(outcomes, job.spec.on_parent_failure)
        if step is None and record is not None and record.steps and not record.schedule:
            # A job added to a workflow submitted as one unit: one more step to end.
            state.nodes.put_workflow(record.evolve(steps=record.steps + 1))
        state.nodes.put(StepNode(owner=owner, workflow_id=workflow_id, job_id=job.job_id,
                                 parents=parents, waiting=list(gate.waiting),
                                 step=step))  # fmt: skip
        return gate

    # -- a job of the workflow ended -----------------------------------------------------

    def step_ended(self, state: TimerState, data: StepEnded, owner: str,
                   now_ms: int) -> list[Output]:  # fmt: skip
        """Record how a job of ``owner``'s workflow ended; release, cancel or keep waiting
        each of its children."""
        workflow_id, parent, outcome = data.workflow_id, data.job_id, data.outcome
        node = state.nodes.get(owner, workflow_id, parent)
        if node is None:
            self.unknown_ends += 1
            return []
        if node.outcome == outcome:
            return []  # the same end read again (a replayed jobs.events): done already
        if node.outcome is None and node.members_ended < node.members:
            # Its spawned children still run: its end waits for theirs (timers/maps.py).
            state.nodes.put(node.evolve(own_outcome=outcome, result=data.result,
                                        result_uri=data.result_uri))  # fmt: skip
            return []
        if node.outcome is None and node.members and not node.next_member:
            # A spawner whose children ended first: the worst of its end and theirs.
            outcome = run_outcome(outcome, node.member_outcome or outcome)
        first_end = node.outcome is None
        state.nodes.put(node.evolve(outcome=outcome, result=data.result,
                                    result_uri=data.result_uri,
                                    ended_at_ms=data.ended_at_ms))  # fmt: skip
        emits: list[Output] = []
        for child_id in state.nodes.waiting_on(owner, workflow_id, parent):
            child = state.nodes.get(owner, workflow_id, child_id)
            if child is not None:
                emits.extend(self._follow(state, child, parent, outcome, now_ms))
        if first_end and node.member_of is not None and self.members is not None:
            emits.extend(self.members.member_ended(state, node, outcome, now_ms))
        if first_end:
            emits.extend(self._count_end(state, owner, workflow_id, outcome, now_ms))
        return emits

    def _count_end(self, state: TimerState, owner: str, workflow_id: str, outcome: StepOutcome,
                   now_ms: int) -> list[Output]:  # fmt: skip
        """One more step of the workflow ended; once all have, forget its nodes and tell a
        recurring workflow that its run ended."""
        record = state.nodes.workflow(owner, workflow_id)
        if record is None or not record.steps:
            return []  # submitted job by job: how many steps it has is never known
        if record.schedule:  # a run ended: keep the latest run's node only
            self._forget_ended_runs(state, record)
            return []
        run_ended = run_outcome(record.outcome, outcome)
        record = record.evolve(ended=record.ended + 1, outcome=run_ended)
        state.nodes.put_workflow(record)
        if record.ended < record.steps:
            return []
        for node in list(state.nodes.of_workflow(owner, workflow_id)):
            state.nodes.delete(node)
        state.nodes.drop_signals(owner, workflow_id)
        marker = Marker(job_id=workflow_id, idempotency_key=None, owner=owner)
        state.put(MarkerEntry(timer_id=ended_timer_id(owner, workflow_id), job=marker,
                              due_ms=now_ms + self.record_ttl_ms))  # fmt: skip
        if record.schedule_id is None:
            return []
        ended = StepEnded(job_id=workflow_id, workflow_id=record.schedule_id, owner=owner,
                          outcome=run_ended, ended_at_ms=now_ms,
                          detail=f"run of {record.steps} steps ended")  # fmt: skip
        return [Output(self.intake, record.schedule_id.encode(), Event.of(ended))]

    @staticmethod
    def _forget_ended_runs(state: TimerState, record: WorkflowRecord) -> None:
        for node in list(state.nodes.of_workflow(record.owner, record.workflow_id)):
            if node.outcome is not None and node.job_id != record.last_run:
                state.nodes.delete(node)

    def _follow(self, state: TimerState, child: StepNode, parent: str, outcome: StepOutcome,
                now_ms: int) -> list[Output]:  # fmt: skip
        entry = state.get(child.job_id)
        if not isinstance(entry, JobEntry) or not entry.blocked:  # cancelled while it waited
            state.nodes.put(child.evolve(waiting=[]))
            return []
        gate = after_parent_ended(child.waiting, parent, outcome, entry.spec.on_parent_failure)
        state.nodes.put(child.evolve(waiting=list(gate.waiting)))
        if gate.action is GateAction.WAIT:
            return [self.blocked(entry.job, now_ms, entry.due_ms, gate.waiting)]
        if gate.action is GateAction.CANCEL:
            cancel = JobCancelled(job_id=child.job_id, workflow_id=child.workflow_id,
                                  requested_at_ms=now_ms, reason=gate.reason)  # fmt: skip
            return self.cancel(state, cancel, now_ms)
        due = max(entry.due_ms, now_ms)
        state.put(entry.evolve(blocked=False, due_ms=due))
        return [self.lifecycle(K.SCHEDULED, entry.job, now_ms, scheduled_at_ms=due,
                               detail=f"released: parent {parent} ended {outcome}")]  # fmt: skip

    def blocked(self, job: JobSubmitted, now_ms: int, due_ms: int,
                waiting: tuple[str, ...], **fields: object) -> Output:  # fmt: skip
        more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        shown = ", ".join(waiting[:5]) + more
        return self.lifecycle(K.BLOCKED, job, now_ms, scheduled_at_ms=due_ms,
                              waiting_for=list(waiting), detail=f"waiting for {shown}",
                              **fields)  # fmt: skip

    @staticmethod
    def forget_waiting(state: TimerState, job: JobSubmitted) -> None:
        """A job cancelled while it waited: it waits for nothing any more."""
        if job.workflow_id:
            node = state.nodes.get(job.spec.owner, job.workflow_id, job.job_id)
            if node is not None and node.waiting:
                state.nodes.put(node.evolve(waiting=[]))

    @staticmethod
    def expired(state: TimerState, marker: MarkerEntry) -> None:
        """A marker expired: if it is an ended workflow's, forget the workflow's record."""
        if marker.timer_id.startswith(ENDED_PREFIX):
            state.nodes.delete_workflow(marker.job.owner or "", marker.job_id)

    # -- recurring workflows -------------------------------------------------------------

    def schedule(self, state: TimerState, data: WorkflowSubmitted, cron: CronSpec,
                 now_ms: int) -> None:  # fmt: skip
        """Keep a recurring workflow (``cron``: its schedule, checked): its record, and a
        timer at its first time."""
        workflow_id, schedule = data.workflow_id, data.schedule
        first = next_due_ms(cron, now_ms, job_id=workflow_id, runs_so_far=0)
        if first is None or schedule is None:
            raise ValidationError("schedule", "has no future run")
        state.nodes.put_workflow(WorkflowRecord(
            owner=data.owner, workflow_id=workflow_id, steps=len(data.steps),
            idempotency_key=data.idempotency_key, submitted_at_ms=data.submitted_at_ms,
            schedule=True,
        ))  # fmt: skip
        job = RecurringWorkflow(job_id=workflow_id, template=data,
                                idempotency_key=data.idempotency_key,
                                spec=ScheduleSpec(cron=schedule, owner=data.owner))  # fmt: skip
        state.put(ScheduleEntry(timer_id=schedule_timer_id(data.owner, workflow_id), job=job,
                                due_ms=first))  # fmt: skip
        log.info("recurring workflow %s: first run at %d", workflow_id, first)

    def start_run(self, state: TimerState, entry: ScheduleEntry, due_ms: int,
                  now_ms: int) -> list[Output]:  # fmt: skip
        """The run of a recurring workflow due at ``due_ms``, sent to its own partition."""
        owner, schedule_id = entry.owner, entry.job_id
        record = (state.nodes.workflow(owner, schedule_id)
                  or WorkflowRecord(owner, schedule_id, schedule=True))  # fmt: skip
        previous = state.nodes.get(owner, schedule_id, record.last_run) if record.last_run else None
        ended = None if previous is None else previous.outcome is not None
        if not may_start(entry.cron.overlap, ended):
            self.runs_skipped += 1
            log.info("recurring workflow %s: no run at %d, run %s has not ended",
                     schedule_id, due_ms, record.last_run)  # fmt: skip
            return []
        run_id = run_workflow_id(schedule_id, due_ms)
        state.nodes.put(StepNode(owner=owner, workflow_id=schedule_id, job_id=run_id,
                                 step=str(due_ms)))  # fmt: skip
        state.nodes.put_workflow(record.evolve(last_run=run_id))
        self._forget_ended_runs(state, record.evolve(last_run=run_id))
        run = run_record(entry.job.template, run_id, now_ms=now_ms)
        return [Output(self.intake, run_id.encode(), Event.of(run))]

    # -- cancelling a workflow -----------------------------------------------------------

    def cancel_workflow(self, state: TimerState, data: WorkflowCancelled,
                        now_ms: int) -> list[Output]:  # fmt: skip
        """Cancel every job of the workflow not ended yet; later submissions are refused.

        As for a job's cancel, a job that has fired is cancelled where a worker holds it
        (a CancelRequested on jobs.control), and its retries are dropped.
        """
        owner, workflow_id = data.owner or "", data.workflow_id  # an owner: validate_command
        reason = data.reason or f"workflow {workflow_id} cancelled"
        record = (state.nodes.workflow(owner, workflow_id)
                  or WorkflowRecord(owner=owner, workflow_id=workflow_id))  # fmt: skip
        state.nodes.put_workflow(record.evolve(cancelled=True))
        state.nodes.drop_signals(owner, workflow_id)
        if record.schedule:  # no more runs; the runs started go on (each can be cancelled)
            state.remove(schedule_timer_id(owner, workflow_id))
            return []
        emits: list[Output] = []
        for node in list(state.nodes.of_workflow(owner, workflow_id)):
            if node.outcome is None:
                cancel = JobCancelled(job_id=node.job_id, workflow_id=workflow_id, reason=reason,
                                      requested_by=data.requested_by,
                                      requested_at_ms=data.requested_at_ms)  # fmt: skip
                emits.extend(self.cancel(state, cancel, now_ms))
        return emits

    # -- firing --------------------------------------------------------------------------

    @staticmethod
    def parent_results(state: TimerState, job: JobSubmitted) -> list[ParentResultRecord]:
        """The ParentResult records (Avro) of a job's execution, in its depends_on order."""
        workflow_id, parents = job.workflow_id, job.spec.depends_on
        if not workflow_id or not parents:
            return []
        found: list[ParentResultRecord] = []
        budget = PARENT_RESULTS_INLINE_BYTES
        for parent in parents:
            node = state.nodes.get(job.spec.owner, workflow_id, parent)
            if node is None:
                found.append(ParentResultRecord(job_id=parent, outcome=StepOutcome.UNKNOWN))
                continue
            budget = _results(found, [node], budget)
            if node.next_member:  # a map: each item's result after its own, in item order
                name = node.step or node.job_id
                items = (state.nodes.get(node.owner, workflow_id,
                                         item_job_id(node.owner, workflow_id, name, index))
                         for index in range(node.members))  # fmt: skip
                budget = _results(found, items, budget, items=True)
        return found


RECORD_BYTES = 24
"""What one ParentResult costs in an execution beside its ids and result: its outcome, its
fields' lengths and nulls, with room to spare."""


def _results(found: list[ParentResultRecord], nodes: Iterable[StepNode | None], budget: int,
             *, items: bool = False) -> int:  # fmt: skip
    """Append each node's ParentResult, its result inline while ``budget`` lasts; what is
    left. A map's ``items`` stop once the budget is spent: past it, the execution would
    outgrow the topics' record size (a join reads the rest through the API)."""
    for node in nodes:
        if node is None:
            continue
        budget -= RECORD_BYTES + len(node.job_id) + len((node.step or "").encode())
        if items and budget < 0:
            return budget
        result = node.result
        if result is not None:
            budget -= len(result.encode())
            if budget < 0:
                result = None
        outcome = StepOutcome(node.outcome) if node.outcome else StepOutcome.UNKNOWN
        found.append(ParentResultRecord(job_id=node.job_id, outcome=outcome, result=result,
                                        result_uri=node.result_uri, step=node.step))  # fmt: skip
    return budget
