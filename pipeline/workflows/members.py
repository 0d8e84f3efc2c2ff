"""Jobs that belong to another job of their workflow: a map's items, a handler's children.

A *member* is a job of a workflow that another job of it (its *holder*) started after the
workflow was submitted: an item of a ``map`` step, which the timers start one per item of
a parent's result, or a child a running handler submitted with ``ctx.spawn``. The holder
counts as ended, for the steps that depend on it, only once every member has ended too
(docs/workflows.md, "Maps" and "Children"). Pure: the names and ids members get, derived
so that starting them again (a replay, a retried handler) makes the same jobs, which the
timers then recognise as submitted already.
"""

from __future__ import annotations

from jobstream._pipeline.workflows.ids import step_job_id

SPAWNED_BY_LABEL = "jobstream.spawned_by"
"""The label a spawned child carries its holder's job id in (the timers read it)."""
MAX_SPAWN_KEY_CHARS = 100


def spawned_step(holder_step: str, key: str) -> str:
    """The step name of the child ``key`` of the job whose step name (or job id, for a job
    submitted outside a workflow file) is ``holder_step``."""
    return f"{holder_step}/{key}"


def spawned_job_id(owner: str, workflow_id: str, holder_step: str, key: str) -> str:
    """The job id of the child ``key`` of ``holder_step``: the same for every attempt of the
    holder, so a retried handler's children are the children it already started."""
    return step_job_id(owner, workflow_id, spawned_step(holder_step, key))


def item_step(map_step: str, index: int) -> str:
    """The step name of item ``index`` (from 0) of the map step ``map_step``."""
    return f"{map_step}[{index}]"


def item_job_id(owner: str, workflow_id: str, map_step: str, index: int) -> str:
    return step_job_id(owner, workflow_id, item_step(map_step, index))
