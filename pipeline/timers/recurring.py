"""A recurring workflow's commands and its own status, at the timers of its partition.

A recurring workflow is a :class:`ScheduleEntry` (pipeline/timers/workflow.py starts its
runs). Here, as for a recurring job (pipeline/timers/logic.py):

- PAUSE takes the entry out of the schedule: no run starts (the runs started go on);
- RESUME puts it back at the schedule's next time after now: the times missed while it
  was paused start no run, whatever its misfire policy (which covers the timers' own
  downtime), as for a recurring job;
- UPDATE replaces the schedule (its next time is computed from now) and/or the steps of
  the template, for the runs that start after it; a paused workflow stays paused;
- a trigger (JobTriggered) starts a run now, under the schedule's overlap policy; it
  counts towards ``max_runs`` and the schedule keeps its times.

A command for a workflow that has no schedule here (cancelled, ended, unknown, or another
owner's) or that the rule refuses (:func:`workflow_refusal`) changes nothing and is logged.

The workflow's status is a job of type ``jobstream.workflow`` in jobs.status, under
:func:`schedule_job_id`: JobLifecycle events of it go to jobs.events, so the status
processor, the views and a console consumer see it as they see a job. SCHEDULED (at the
submission, at each of its times and after an update or a trigger) carries its next time;
PAUSED, RESUMED and CANCELLED follow the commands, naming who asked; a run's end is a
SCHEDULED (PAUSED while paused) whose ``result`` names the run and its outcome, which the
status processor counts in ``runs`` (pipeline/status/machine.py).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import orjson

from jobstream._pipeline.model.job import cron_of
from jobstream._pipeline.model.lifecycle import SCHEDULE_JOB_TYPE, LifecycleKind
from jobstream._pipeline.model.params import summarize_params
from jobstream._pipeline.model.records import (
    CronSchedule,
    JobLifecycle,
    JobTriggered,
    ScheduleAction,
    ScheduleChanged,
    WorkflowCancelled,
    WorkflowSubmitted,
    evolve,
)
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.scheduling import next_due_ms
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.entry import ScheduleEntry, schedule_timer_id
from jobstream._pipeline.timers.intake import Ended
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.timers.workflow import WorkflowTimers
from jobstream._pipeline.workflows.ids import schedule_job_id
from jobstream._pipeline.workflows.schedule_commands import workflow_refusal

log = logging.getLogger(__name__)

K = LifecycleKind

WORKFLOW_LABEL = "jobstream.workflow"
"""The label a recurring workflow's status carries its workflow id in."""

Command = ScheduleChanged | JobTriggered


class RecurringWorkflows:
    def __init__(self, events: str, workflows: WorkflowTimers) -> None:
        self.events = events
        """jobs.events: where the workflow's status events go."""
        self.workflows = workflows

    # -- the status ----------------------------------------------------------------------

    def _status(self, kind: LifecycleKind, owner: str, workflow_id: str, now_ms: int,
                **fields: Any) -> Output:  # fmt: skip
        job_id = schedule_job_id(owner, workflow_id)
        event = JobLifecycle(kind=kind, job_id=job_id, at_ms=now_ms, job_type=SCHEDULE_JOB_TYPE,
                             owner=owner, **fields)  # fmt: skip
        return Output(self.events, job_id.encode(), Event("JobLifecycle", event))

    def scheduled(self, state: TimerState, data: WorkflowSubmitted, now_ms: int) -> list[Output]:
        """The first status of a recurring workflow just kept: its first time, what it is."""
        entry = state.get(schedule_timer_id(data.owner, data.workflow_id))
        if not isinstance(entry, ScheduleEntry):
            return []
        summary = summarize_params(None)._asdict()
        return [self._status(K.SCHEDULED, data.owner, data.workflow_id, now_ms,
                             scheduled_at_ms=entry.due_ms, created_at_ms=data.submitted_at_ms,
                             labels={WORKFLOW_LABEL: data.workflow_id}, **summary,
                             detail=_described(data.workflow_id, entry.cron))]  # fmt: skip

    def fired(self, state: TimerState, entry: ScheduleEntry, started: list[Output],
              now_ms: int) -> list[Output]:  # fmt: skip
        """The status after a time of the schedule (``started``: the run it submitted, or
        none when the previous run still ran): its next time, or its end."""
        owner, workflow_id = entry.owner, entry.job_id
        detail = (f"run {_run_id(started)} started" if started
                  else "no run: the previous run has not ended")  # fmt: skip
        after = state.get(entry.timer_id)
        if not isinstance(after, ScheduleEntry):
            return [
                *started,
                self._status(
                    K.CANCELLED,
                    owner,
                    workflow_id,
                    now_ms,
                    detail=f"{detail}; the schedule has no future run",
                ),
            ]
        return [*started, self._status(K.SCHEDULED, owner, workflow_id, now_ms,
                                       scheduled_at_ms=after.due_ms, detail=detail)]  # fmt: skip

    def run_ended(self, state: TimerState, ended: Ended, now_ms: int) -> list[Output]:
        """A run of a recurring workflow ended (read before the timers record it): its
        status names the run and its outcome. Nothing once the schedule has ended."""
        data, owner = ended.record, ended.owner
        record = state.nodes.workflow(owner, data.workflow_id)
        if record is None or not record.schedule:
            return []
        node = state.nodes.get(owner, data.workflow_id, data.job_id)
        entry = state.get(schedule_timer_id(owner, data.workflow_id))
        if node is None or node.outcome is not None or not isinstance(entry, ScheduleEntry):
            return []
        outcome = str(data.outcome)
        result = orjson.dumps({"run_id": data.job_id, "outcome": outcome}).decode()
        kind, at = (
            (K.PAUSED, {}) if entry.paused else (K.SCHEDULED, {"scheduled_at_ms": entry.due_ms})
        )
        return [self._status(kind, owner, data.workflow_id, now_ms, result=result,
                             detail=f"run {data.job_id} ended {outcome}", **at)]  # fmt: skip

    def cancelled(self, state: TimerState, data: WorkflowCancelled, now_ms: int) -> list[Output]:
        """A recurring workflow's cancel (read before the timers apply it): CANCELLED."""
        owner = data.owner or ""
        if not isinstance(state.get(schedule_timer_id(owner, data.workflow_id)), ScheduleEntry):
            return []
        return [self._status(K.CANCELLED, owner, data.workflow_id, now_ms,
                             requested_by=data.requested_by,
                             detail=data.reason or "cancelled")]  # fmt: skip

    # -- commands ------------------------------------------------------------------------

    def command(self, state: TimerState, data: Command, now_ms: int) -> list[Output]:
        """Apply a command naming a recurring workflow (its owner set, checked at intake)."""
        assert data.owner is not None and data.workflow_id is not None  # check_workflow_command's
        entry = state.get(schedule_timer_id(data.owner, data.workflow_id))
        if not isinstance(entry, ScheduleEntry):
            _ignored(
                data,
                f"{data.owner}'s workflow {data.workflow_id} has no schedule here: "
                "it was cancelled, has ended, or is not a recurring workflow",
            )
            return []
        if isinstance(data, JobTriggered):
            return self._trigger(state, entry, data, now_ms)
        if data.action is ScheduleAction.PAUSE:
            if entry.paused:
                _ignored(data, "already paused")
                return []
            state.put(entry.evolve(paused=True))
            return [self._status(K.PAUSED, entry.owner, entry.job_id, now_ms,
                                 **_asked(data, "paused"))]  # fmt: skip
        if data.action is ScheduleAction.RESUME:
            if not entry.paused:
                _ignored(data, "not paused")
                return []
            return self._moved(state, entry.evolve(paused=False), entry.cron, now_ms, data,
                               K.RESUMED, "resumed")  # fmt: skip
        return self._update(state, entry, data, now_ms)

    def _update(self, state: TimerState, entry: ScheduleEntry, data: ScheduleChanged,
                now_ms: int) -> list[Output]:  # fmt: skip
        template, spec = entry.job.template, entry.job.spec
        changed = []
        if data.steps is not None:
            template = evolve(template, steps=data.steps)
            changed.append("steps")
        if data.cron is not None:
            template = evolve(template, schedule=data.cron)
            spec = msgspec.structs.replace(spec, cron=data.cron)
            changed.append("schedule")
        job = msgspec.structs.replace(entry.job, template=template, spec=spec)
        updated = entry.evolve(job=job)
        done = " and ".join(changed) + " updated"
        if data.cron is None:
            state.put(updated)
            kind, fields = ((K.PAUSED, {}) if entry.paused
                            else (K.SCHEDULED, {"scheduled_at_ms": entry.due_ms}))  # fmt: skip
            return [self._status(kind, entry.owner, entry.job_id, now_ms, **fields,
                                 **_asked(data, done))]  # fmt: skip
        kind = K.PAUSED if entry.paused else K.SCHEDULED
        return self._moved(state, updated, data.cron, now_ms, data, kind, done)

    def _moved(self, state: TimerState, entry: ScheduleEntry, cron: CronSchedule, now_ms: int,
               data: Command, kind: LifecycleKind, done: str) -> list[Output]:  # fmt: skip
        """``entry`` at its schedule's next time after now; CANCELLED when it has none."""
        due = next_due_ms(cron_of(cron), now_ms, job_id=entry.job_id, runs_so_far=entry.runs)
        if due is None:
            state.remove(entry.timer_id)
            return [
                self._status(
                    K.CANCELLED,
                    entry.owner,
                    entry.job_id,
                    now_ms,
                    **_asked(data, f"{done}: the schedule has no future run"),
                )
            ]
        state.put(entry.evolve(due_ms=due))
        at = {} if kind is K.PAUSED else {"scheduled_at_ms": due}
        still = ", still paused" if kind is K.PAUSED else ""
        return [self._status(kind, entry.owner, entry.job_id, now_ms, **at,
                             **_asked(data, done + still))]  # fmt: skip

    def _trigger(self, state: TimerState, entry: ScheduleEntry, data: JobTriggered,
                 now_ms: int) -> list[Output]:  # fmt: skip
        refusal = workflow_refusal("trigger", entry.job_id, paused=entry.paused)
        if refusal is not None:
            _ignored(data, refusal)
            return []
        started = self.workflows.start_run(state, entry, now_ms, now_ms)
        if not started:
            _ignored(data, "the previous run has not ended (overlap SKIP)")
            return []
        runs = entry.runs + 1
        max_runs = entry.cron.max_runs
        run = _run_id(started)
        if max_runs is not None and runs >= max_runs:
            state.remove(entry.timer_id)
            return [*started, self._status(K.CANCELLED, entry.owner, entry.job_id, now_ms,
                                           **_asked(data, f"run {run} started now; the "
                                                    "schedule has no future run"))]  # fmt: skip
        state.put(entry.evolve(runs=runs))
        return [*started, self._status(K.SCHEDULED, entry.owner, entry.job_id, now_ms,
                                       scheduled_at_ms=entry.due_ms,
                                       **_asked(data, f"run {run} started now"))]  # fmt: skip


def _run_id(started: list[Output]) -> str:
    """The workflow id of the run ``started`` submitted (start_run's one output)."""
    event = started[-1].value
    assert isinstance(event, Event)  # start_run's output is the run's WorkflowSubmitted
    run: WorkflowSubmitted = event.data
    return run.workflow_id


def _described(workflow_id: str, cron: CronSchedule) -> str:
    return f"recurring workflow {workflow_id}: {cron.expression} ({cron.timezone})"


def _ignored(command: Command, reason: str) -> None:
    what = "trigger" if isinstance(command, JobTriggered) else f"{command.action.lower()}"
    log.info("recurring workflow %s ignored", what,
             extra={"workflow_id": command.workflow_id, "owner": command.owner,
                    "reason": reason})  # fmt: skip


def _asked(command: Command, done: str) -> dict[str, str | None]:
    """Who asked, and why (the reason given, else what was ``done``)."""
    return {"requested_by": command.requested_by, "detail": command.reason or done}
