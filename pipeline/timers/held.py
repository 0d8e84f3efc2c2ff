"""Waits and sleeps at the timers: steps that end on a signal or an instant, not a worker.

A step of a held type (pipeline/model/held.py) is submitted, blocked and released like any
job. When its entry comes due, the timers *begin* it instead of firing an execution:

- a sleep becomes WAITING, its entry due again at its wake instant; then it SUCCEEDED;
- a wait takes the signal of its name kept for the workflow, if one came before it, and
  SUCCEEDED at once; otherwise it becomes WAITING, its step node naming the signal it
  awaits and its entry due at its timeout (never, without one). A signal that comes ends
  it, SUCCEEDED with the signal's payload as its result (CANCELLED for one that rejects);
  its timeout ends it EXPIRED (WaitTimedOut), and its children follow their
  ``on_parent_failure``.

A signal that no step of the workflow awaits is kept, the latest of each name (at most
:data:`MAX_KEPT_SIGNALS` names), for the first step that will, until the workflow ends or
is cancelled; one naming a step (by name or job id: an approval) is only for that step
while it waits. The end goes to jobs.events; the status processor's StepEnded then
releases the children as for any job. Everything is in the timers' transaction: the
signal consumed, the entry ended and the WAITING or SUCCEEDED written commit together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.held import NEVER_MS, Map, Sleep, Wait, held_step
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import ErrorInfo, WorkflowSignalled
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.timers.entry import JobEntry
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import Lifecycle
from jobstream._pipeline.workflows import StepNode

log = logging.getLogger(__name__)

K = LifecycleKind

WAIT_TIMED_OUT = "WaitTimedOut"
MAX_KEPT_SIGNALS = 100
"""Signals of distinct names a workflow keeps for steps that have not begun waiting; past
it a signal of a new name goes to jobs.intake.dlq."""
"""The error of a wait that ended EXPIRED: no signal of its name within its timeout."""

Finish = Callable[[TimerState, JobEntry, int], None]
"""``(state, entry, now_ms)``: drop a timer that has ended, leaving its markers."""
BeginMap = Callable[[TimerState, JobEntry, Map, int], list[Output]]
"""``(state, entry, map, now_ms)``: start a map's items (pipeline/timers/maps.py)."""


class HeldSteps:
    def __init__(self, lifecycle: Lifecycle, finish: Finish, begin_map: BeginMap) -> None:
        self.lifecycle = lifecycle
        self.finish = finish
        self.begin_map = begin_map

    def fire(self, state: TimerState, entry: JobEntry, now_ms: int) -> list[Output]:
        """A held step's entry came due: begin it, or end it at its instant."""
        step = held_step(entry.spec)
        if entry.waiting_since_ms is None:
            if isinstance(step, Map):
                return self.begin_map(state, entry, step, now_ms)
            return self._begin(state, entry, step, now_ms)
        if isinstance(step, Map) or (isinstance(step, Wait) and step.timeout_ms is None):
            state.put(entry.evolve(due_ms=NEVER_MS))  # ends on its items or its signal only
            return []
        self.finish(state, entry, now_ms)
        self._awaits(state, entry, None)
        if isinstance(step, Sleep):
            return [self.lifecycle(K.SUCCEEDED, entry.job, now_ms, scheduled_at_ms=entry.due_ms,
                                   detail="slept until its instant")]  # fmt: skip
        message = f"no signal {step.signal!r} within {step.timeout_ms} ms"
        error = ErrorInfo(attempt=entry.attempt, error_type=WAIT_TIMED_OUT, message=message,
                          retryable=False, at_ms=now_ms)  # fmt: skip
        return [self.lifecycle(K.EXPIRED, entry.job, now_ms, error=error, detail=message)]

    def _begin(self, state: TimerState, entry: JobEntry, step: Wait | Sleep,
               now_ms: int) -> list[Output]:  # fmt: skip
        job = entry.job
        if isinstance(step, Sleep):
            wake = step.wake_ms(now_ms)
            state.put(entry.evolve(waiting_since_ms=now_ms, due_ms=wake))
            return [self.lifecycle(K.WAITING, job, now_ms, scheduled_at_ms=wake,
                                   detail=f"sleeping until {wake}")]  # fmt: skip
        kept = self._kept(state, entry, step.signal)
        if kept is not None:
            state.nodes.drop_signal(kept.owner, kept.workflow_id, kept.name)
            self.finish(state, entry, now_ms)
            return [self._ended_by(kept, entry, now_ms)]
        until = step.until_ms(now_ms)
        state.put(entry.evolve(waiting_since_ms=now_ms, due_ms=until))
        self._awaits(state, entry, step.signal)
        timeout = None if until == NEVER_MS else until
        more = "" if timeout is None else f" until {timeout}"
        return [self.lifecycle(K.WAITING, job, now_ms, scheduled_at_ms=timeout,
                               waiting_for=[step.signal],
                               detail=f"waiting for signal {step.signal!r}{more}")]  # fmt: skip

    @staticmethod
    def _kept(state: TimerState, entry: JobEntry, name: str) -> WorkflowSignalled | None:
        workflow_id = entry.job.workflow_id
        if workflow_id is None:
            return None
        kept = state.nodes.signal(entry.owner, workflow_id, name)
        return kept if kept is not None and kept.step is None else None

    @staticmethod
    def _awaits(state: TimerState, entry: JobEntry, signal: str | None) -> None:
        workflow_id = entry.job.workflow_id
        if workflow_id is None:
            return
        node = state.nodes.get(entry.owner, workflow_id, entry.job_id)
        if node is not None and node.awaits != signal:
            state.nodes.put(node.evolve(awaits=signal))

    def signalled(self, state: TimerState, signal: WorkflowSignalled,
                  now_ms: int) -> list[Output]:  # fmt: skip
        """End every step of the workflow waiting for the signal, or keep it for one.

        Raises ValidationError (the record goes to jobs.intake.dlq with the reason) for a
        workflow this partition does not hold: never submitted, of another owner, or ended.
        """
        owner, workflow_id = signal.owner, signal.workflow_id
        record = state.nodes.workflow(owner, workflow_id)
        known = record is not None or next(state.nodes.of_workflow(owner, workflow_id), None)
        if not known or (record is not None and record.steps and record.ended >= record.steps):
            why = ("never submitted, or ended; or the record is keyed or partitioned otherwise "
                   "than by its workflow id with Java's murmur2")
            raise ValidationError("workflow_id", f"{owner}'s workflow {workflow_id} is not "
                                                 f"running here: {why}")  # fmt: skip
        if record is not None and record.cancelled:
            raise ValidationError("workflow_id", f"workflow {workflow_id} was cancelled")
        emits = [self._end(state, node, signal, now_ms)
                 for node in self._waiting(state, signal)]  # fmt: skip
        ended = [emit for emit in emits if emit is not None]
        if ended:
            return ended
        if signal.step is not None:
            log.info("signal for a step not waiting dropped",
                     extra={"workflow_id": workflow_id, "step": signal.step,
                            "signal": signal.name})  # fmt: skip
            return []
        kept = state.nodes.kept_signals(owner, workflow_id)
        if signal.name not in kept and len(kept) >= MAX_KEPT_SIGNALS:
            raise ValidationError("name", f"workflow {workflow_id} keeps {len(kept)} signals no "
                                          "step has taken: no more are kept")  # fmt: skip
        state.nodes.keep_signal(signal)
        return []

    @staticmethod
    def _waiting(state: TimerState, signal: WorkflowSignalled) -> list[StepNode]:
        return [node for node in state.nodes.of_workflow(signal.owner, signal.workflow_id)
                if node.awaits == signal.name and node.outcome is None
                and signal.step in (None, node.step, node.job_id)]  # fmt: skip

    def _end(self, state: TimerState, node: StepNode, signal: WorkflowSignalled,
             now_ms: int) -> Output | None:  # fmt: skip
        entry = state.get(node.job_id)
        if not isinstance(entry, JobEntry) or entry.waiting_since_ms is None:
            state.nodes.put(node.evolve(awaits=None))  # cancelled while it waited
            return None
        self.finish(state, entry, now_ms)
        state.nodes.put(node.evolve(awaits=None))
        return self._ended_by(signal, entry, now_ms)

    def _ended_by(self, signal: WorkflowSignalled, entry: JobEntry, now_ms: int) -> Output:
        by = signal.requested_by
        if signal.reject:
            reason = signal.reason or f"signal {signal.name!r} rejected it"
            return self.lifecycle(K.CANCELLED, entry.job, now_ms, detail=reason, requested_by=by)
        detail = f"signal {signal.name!r}" + (f" from {by}" if by else "")
        if signal.reason:
            detail += f": {signal.reason}"
        return self.lifecycle(K.SUCCEEDED, entry.job, now_ms, result=signal.payload,
                              detail=detail, requested_by=by)  # fmt: skip
