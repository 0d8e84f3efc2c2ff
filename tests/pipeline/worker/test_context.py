"""What a handler sees of its execution, and how a job's timeout is chosen."""

from __future__ import annotations

import dataclasses

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.records import ExecutionRequested, plain, typed
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.app import DEFAULT_TIMEOUT_S
from jobstream._pipeline.worker.context import build_context
from tests.pipeline.worker.executions import execution_requested


def test_the_context_carries_the_execution_and_parsed_params() -> None:
    record = execution_requested(job_type="image.render", params={"size": [2, 3]}, attempt=2).data
    ctx = build_context(record, worker_id="w-1", started_ms=1_000, timeout_s=2.5)
    assert isinstance(ctx, JobContext)
    assert (ctx.job_id, ctx.execution_id, ctx.attempt, ctx.epoch) == (
        record["job_id"], record["execution_id"], 2, record["epoch"])  # fmt: skip
    assert (ctx.job_type, ctx.owner, ctx.worker_id) == ("image.render", "tests", "w-1")
    assert ctx.params == {"size": [2, 3]}
    assert ctx.scheduled_at_ms == record["scheduled_at_ms"]
    assert ctx.deadline_ms == 3_500, "the instant this worker times the attempt out"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.attempt = 3  # type: ignore[misc]


@pytest.mark.parametrize("params", ["[1, 2]", "not json", '"text"'])
def test_params_that_are_not_a_json_object_are_refused(params: str) -> None:
    record = execution_requested(raw_params=params).data
    with pytest.raises(ValidationError) as caught:
        build_context(record, worker_id="w", started_ms=0, timeout_s=1)  # fmt: skip
    assert caught.value.field == "spec.params" and caught.value.retryable is False


def test_the_jobs_own_timeout_wins_then_the_handlers_then_300_s() -> None:
    app = WorkerApp()

    @app.handler("with.timeout", timeout_s=60)
    def with_timeout(ctx: JobContext) -> None: ...

    @app.handler("without")
    def without(ctx: JobContext) -> None: ...

    assert app.get("with.timeout").timeout_for(execution_requested(timeout_ms=1500).data) == 1.5
    assert app.get("with.timeout").timeout_for(execution_requested().data) == 60
    assert app.get("without").timeout_for(execution_requested().data) == DEFAULT_TIMEOUT_S == 300


def test_a_child_sees_its_parents_results_by_step_name() -> None:
    parents = [
        {"job_id": "W1", "outcome": "SUCCEEDED", "result": '{"rows": 3}', "result_uri": None,
         "step": "extract"},
        {"job_id": "W2", "outcome": "SUCCEEDED", "result": None,
         "result_uri": "kafka://jobs.results/01JCHART", "step": "chart"},
        {"job_id": "01JD3W6Q8Z5X7M2K4N9P0R1S2T", "outcome": "DEAD_LETTERED", "result": None,
         "result_uri": None, "step": None},
    ]  # fmt: skip
    record = typed("ExecutionRequested", {**plain(execution_requested().data),
                                          "parent_results": parents})
    assert isinstance(record, ExecutionRequested)
    ctx = build_context(record, worker_id="w", started_ms=0, timeout_s=1)  # fmt: skip
    assert list(ctx.parent_results) == ["extract", "chart", "01JD3W6Q8Z5X7M2K4N9P0R1S2T"]
    assert ctx.parent_results["extract"].result == {"rows": 3}
    assert ctx.parent_results["chart"].result_uri == "kafka://jobs.results/01JCHART"
    assert ctx.parent_results["01JD3W6Q8Z5X7M2K4N9P0R1S2T"].outcome == "DEAD_LETTERED"
    with pytest.raises(TypeError):
        ctx.parent_results["x"] = ctx.parent_results["chart"]  # type: ignore[index]
    orphan = build_context(execution_requested().data, worker_id="w", started_ms=0,
                           timeout_s=1)  # fmt: skip
    assert dict(orphan.parent_results) == {}
