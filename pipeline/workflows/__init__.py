"""Workflows: jobs that depend on jobs, in a DAG within one workflow.

Pure parts only: the graph's checks (:mod:`.dag`), the ids of steps (:mod:`.ids`), what the
timers keep per job of a workflow (:mod:`.node`), the rules that hold or release a child
(:mod:`.release`) and the runs of recurring workflows (:mod:`.runs`). The timers
(pipeline/timers/workflow.py) and the status processor carry them; docs/workflows.md has
the design.
"""

from jobstream._pipeline.workflows.dag import MAX_STEPS, topological_order
from jobstream._pipeline.workflows.ids import idempotent_workflow_id, run_workflow_id, step_job_id
from jobstream._pipeline.workflows.node import StepNode, WorkflowRecord
from jobstream._pipeline.workflows.release import (
    Gate,
    GateAction,
    StepOutcome,
    admit,
    after_parent_ended,
)
from jobstream._pipeline.workflows.runs import RUN_LABEL, may_start, run_outcome, run_record

__all__ = [
    "MAX_STEPS",
    "RUN_LABEL",
    "Gate",
    "GateAction",
    "StepNode",
    "StepOutcome",
    "WorkflowRecord",
    "admit",
    "after_parent_ended",
    "idempotent_workflow_id",
    "may_start",
    "run_outcome",
    "run_record",
    "run_workflow_id",
    "step_job_id",
    "topological_order",
]
