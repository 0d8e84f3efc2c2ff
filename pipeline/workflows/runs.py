"""Recurring workflows: a schedule whose every run is a new workflow of its template.

Pure: what the timers need to start a run and to know when one has ended.

- A recurring workflow is a WorkflowSubmitted with a ``schedule`` (a CronSchedule): its
  steps are a template, and its id names the schedule. At each time of the schedule the
  timers submit a *run*: the same steps under a workflow id derived from the schedule's
  id and the run's nominal time (:func:`~jobstream._pipeline.workflows.ids.run_workflow_id`), so a
  run started twice is the same workflow, which the second submission leaves alone.
- A run carries ``schedule_id``; once every one of its steps has ended, the timers of the
  run's partition send a StepEnded of the run (its id as the job id, the schedule's id as
  the workflow id) to the schedule's partition, where the run is a node of the schedule.
- With ``overlap: SKIP`` a time of the schedule that comes while the previous run has not
  ended starts nothing (:func:`may_start`).
"""

from __future__ import annotations

from jobstream._pipeline.model.records import StepOutcome, WorkflowSubmitted, evolve
from jobstream._pipeline.scheduling.cron import OverlapPolicy

RUN_LABEL = "jobstream.schedule"
"""The label each step of a run carries the schedule's id in (a run is found by it)."""

_WORST_FIRST = (StepOutcome.DEAD_LETTERED, StepOutcome.EXPIRED, StepOutcome.CANCELLED,
                StepOutcome.SUCCEEDED)


def run_record(template: WorkflowSubmitted, run_id: str, *, now_ms: int) -> WorkflowSubmitted:
    """The WorkflowSubmitted of one run of the recurring workflow ``template``."""
    schedule_id = template.workflow_id
    steps = [evolve(step, spec=evolve(step.spec, labels={**step.spec.labels,
                                                         RUN_LABEL: schedule_id}))
             for step in template.steps]  # fmt: skip
    return evolve(template, workflow_id=run_id, idempotency_key=None, submitted_at_ms=now_ms,
                  steps=steps, schedule=None, schedule_id=schedule_id)  # fmt: skip


def run_outcome(so_far: str | None, step: str) -> StepOutcome:
    """A run's outcome once one more step ended ``step``: the worst of its steps'
    (DEAD_LETTERED, then EXPIRED, then CANCELLED, then SUCCEEDED)."""
    seen = {so_far, step}
    return next(outcome for outcome in _WORST_FIRST if outcome in seen)


def may_start(overlap: OverlapPolicy, previous_run_ended: bool | None) -> bool:
    """Whether a run starts now: always with ``ALLOW``; with ``SKIP`` only when there was
    no previous run (None) or it has ended."""
    return overlap == OverlapPolicy.ALLOW or previous_run_ended is not False
