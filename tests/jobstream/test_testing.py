"""jobstream.testing: a handler run by the worker's own loop, in this process, no broker."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

import jobstream.testing
from jobstream import (
    JobContext,
    NonRetryableError,
    ParentResult,
    Result,
    ValidationError,
    WorkerApp,
    load_settings,
)
from jobstream._pipeline.errors import ConfigurationError

log = logging.getLogger("tests.user_app")
app = WorkerApp()
JOB_ID = "01JB8XZ0000000000000000000"
STOPPED = threading.Event()
"""Set by a sync handler that saw its cancel."""


@app.handler("report.generate")
def generate(ctx: JobContext) -> dict[str, object]:
    log.info("reading %s", ctx.params["source"])
    ctx.progress(0.5, "half way")
    ctx.progress(1.0)
    return {"rows": len(ctx.params["rows"]), "attempt": ctx.attempt}


@app.handler("image.render")
def render(ctx: JobContext) -> object:
    kind = ctx.params["kind"]
    if kind == "bytes":
        return b"\x89PNG"
    if kind == "page":
        return Result(b"<p>hi</p>", "text/html")
    return "x" * ctx.params["size"]


@app.handler("data.check")
def check(ctx: JobContext) -> None:
    kind = ctx.params["kind"]
    if kind == "final":
        raise NonRetryableError("the input can never work")
    if kind == "invalid":
        raise ValidationError("params.rows", "expected a list")
    try:
        {}["missing"]
    except KeyError:
        log.exception("lookup failed")
        raise


@app.handler("data.merge")
def merge(ctx: JobContext) -> dict[str, object]:
    return {step: parent.result for step, parent in ctx.parent_results.items()}


@app.handler("data.wait")
def wait(ctx: JobContext) -> str:
    if ctx.wait_cancelled(30):
        STOPPED.set()
        return "stopped"
    return "waited"


@app.handler("data.fetch")
async def fetch(ctx: JobContext) -> dict[str, object]:
    await ctx.aprogress(0.25)
    await asyncio.sleep(ctx.params.get("sleep_s", 0))
    log.warning("fetched")
    return {"job": ctx.job_type}


@app.handler("report.split")
def split(ctx: JobContext) -> list[str]:
    ids = [ctx.spawn("report.generate", {"rows": [n]}) for n in range(ctx.params["pages"])]
    ids.append(ctx.spawn("report.merge", key="merge", priority="high"))
    if ctx.attempt == 1:
        raise RuntimeError("crashed after spawning")
    return ids


def test_a_json_result_succeeds_with_its_progress_and_log_lines() -> None:
    outcome = jobstream.testing.run(app, "report.generate", attempt=2,
                                    params={"rows": [1, 2, 3], "source": "s3://b/k"})  # fmt: skip
    assert outcome.state == "SUCCEEDED" and outcome.error is None
    assert outcome.result == {"rows": 3, "attempt": 2}
    assert outcome.content_type == "application/json"
    assert outcome.result_bytes == b'{"rows":3,"attempt":2}'
    assert [(p.fraction, p.message) for p in outcome.progress] == [(0.5, "half way"), (1.0, None)]
    assert [(line["level"], line["logger"], line["msg"]) for line in outcome.logs] == [
        ("INFO", "tests.user_app", "reading s3://b/k")]
    assert outcome.logs_dropped == 0
    kinds = [event.kind for event in outcome.events]
    assert kinds[0] == "STARTED" and kinds[-1] == "SUCCEEDED"
    assert outcome.events[-1].log_lines == 1
    # The last report is always sent on a HEARTBEAT before the end.
    sent = [event.progress for event in outcome.events if event.progress is not None]
    assert sent[-1].fraction == 1.0


def test_bytes_and_a_result_of_its_own_type_keep_their_content_type() -> None:
    raw = jobstream.testing.run(app, "image.render", params={"kind": "bytes"})
    assert (raw.state, raw.result, raw.content_type) == (
        "SUCCEEDED", b"\x89PNG", "application/octet-stream")
    page = jobstream.testing.run(app, "image.render", params={"kind": "page"})
    assert (page.result, page.content_type) == (b"<p>hi</p>", "text/html")


def test_a_result_over_the_limit_fails_for_good() -> None:
    settings = load_settings(max_result_bytes=100)
    outcome = jobstream.testing.run(app, "image.render", params={"kind": "text", "size": 200},
                                    settings=settings)  # fmt: skip
    assert outcome.state == "FAILED" and outcome.result is None
    assert outcome.error is not None and outcome.error.retryable is False
    assert outcome.error.error_type.endswith("ResultTooLargeError")
    assert "over the limit of 100 bytes" in outcome.error.message


@pytest.mark.parametrize(("kind", "error_type", "retryable"), [
    ("final", "jobstream._pipeline.errors.NonRetryableError", False),
    ("invalid", "jobstream._pipeline.errors.ValidationError", False),
    ("other", "KeyError", True),
])  # fmt: skip
def test_an_error_is_classified_as_the_worker_does(kind: str, error_type: str,
                                                   retryable: bool) -> None:  # fmt: skip
    outcome = jobstream.testing.run(app, "data.check", params={"kind": kind})
    assert outcome.state == "FAILED" and outcome.error is not None
    assert (outcome.error.error_type, outcome.error.retryable) == (error_type, retryable)
    traceback = outcome.error.traceback
    assert traceback is not None and error_type.split(".")[-1] in traceback


def test_a_logged_exception_keeps_its_traceback() -> None:
    outcome = jobstream.testing.run(app, "data.check", params={"kind": "other"})
    [line] = outcome.logs
    assert line["level"] == "ERROR" and line["msg"] == "lookup failed"
    assert "KeyError: 'missing'" in line.get("exc", "")


def test_params_that_are_not_an_object_fail_before_the_handler() -> None:
    outcome = jobstream.testing.run(app, "report.generate", params=[1, 2])  # type: ignore[arg-type]
    assert outcome.state == "FAILED" and outcome.error is not None
    assert outcome.error.retryable is False and "spec.params" in outcome.error.message
    assert [event.kind for event in outcome.events] == ["FAILED"]


def test_parents_reach_the_handler_by_step_name() -> None:
    parents = [
        ParentResult(job_id="J1", step="extract", outcome="SUCCEEDED", result={"n": 1},
                     result_uri=None),
        ParentResult(job_id="J2", step=None, outcome="SUCCEEDED", result=None,
                     result_uri="kafka://jobs.results/J2"),
    ]  # fmt: skip
    outcome = jobstream.testing.run(app, "data.merge", parent_results=parents)
    assert outcome.result == {"extract": {"n": 1}, "J2": None}


def test_a_sync_handler_past_its_timeout_is_timed_out() -> None:
    outcome = jobstream.testing.run(app, "data.wait", timeout_s=0.2)
    assert outcome.state == "TIMED_OUT" and outcome.error is not None
    assert (outcome.error.error_type, outcome.error.retryable) == ("Timeout", True)
    assert outcome.error.message == "the attempt did not finish within 0.2 s"


def test_an_async_handler_past_its_timeout_is_timed_out() -> None:
    outcome = jobstream.testing.run(app, "data.fetch", params={"sleep_s": 30}, timeout_s=0.2)
    assert outcome.state == "TIMED_OUT" and outcome.progress[0].fraction == 0.25


def test_an_async_handler_succeeds() -> None:
    outcome = jobstream.testing.run(app, "data.fetch")
    assert (outcome.state, outcome.result) == ("SUCCEEDED", {"job": "data.fetch"})
    assert [line["msg"] for line in outcome.logs] == ["fetched"]


def test_a_handler_cancelled_from_its_start_sees_the_cancel() -> None:
    STOPPED.clear()
    outcome = jobstream.testing.run(app, "data.wait", cancel_after_s=0)
    assert outcome.state == "CANCELLED" and STOPPED.is_set()
    assert outcome.result is None
    assert outcome.events[-1].requested_by == jobstream.testing.REQUESTED_BY


def test_a_cancel_after_a_while_stops_a_sync_and_an_async_handler() -> None:
    STOPPED.clear()
    assert jobstream.testing.run(app, "data.wait", cancel_after_s=0.1).state == "CANCELLED"
    assert STOPPED.is_set()
    outcome = jobstream.testing.run(app, "data.fetch", params={"sleep_s": 30}, cancel_after_s=0.1)
    assert outcome.state == "CANCELLED"


def test_a_handler_that_ends_before_its_cancel_ends_as_it_would() -> None:
    outcome = jobstream.testing.run(app, "report.generate", cancel_after_s=30,
                                    params={"rows": [], "source": "x"})  # fmt: skip
    assert outcome.state == "SUCCEEDED"


def test_the_log_level_is_the_runs_own_and_put_back() -> None:
    root = logging.getLogger()
    before = root.level
    quiet = jobstream.testing.run(app, "report.generate", log_level="WARNING",
                                  params={"rows": [], "source": "x"})  # fmt: skip
    assert quiet.logs == () and root.level == before


def test_an_unknown_job_type_is_the_workers_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no handler for job type 'nope'"):
        jobstream.testing.run(app, "nope")


def test_the_children_a_handler_spawned_are_on_its_outcome() -> None:
    first = jobstream.testing.run(app, "report.split", params={"pages": 2}, job_id=JOB_ID,
                                  workflow_id="wf-report", step="split")  # fmt: skip
    assert first.state == "FAILED", "submitted all the same"
    assert [child.spec.job_type for child in first.spawned] == [
        "report.generate", "report.generate", "report.merge"]
    assert {child.workflow_id for child in first.spawned} == {"wf-report"}
    assert [child.spec.labels["jobstream.step"] for child in first.spawned] == [
        "split/0", "split/1", "split/merge"]
    assert {child.spec.labels["jobstream.spawned_by"] for child in first.spawned} == {JOB_ID}
    again = jobstream.testing.run(app, "report.split", params={"pages": 2}, job_id=JOB_ID,
                                  workflow_id="wf-report", step="split", attempt=2)  # fmt: skip
    assert again.state == "SUCCEEDED"
    assert again.result == [child.job_id for child in again.spawned]
    assert again.result == [child.job_id for child in first.spawned], "the retry's are the same"


def test_a_job_outside_a_workflow_fails_its_spawn_for_good() -> None:
    outcome = jobstream.testing.run(app, "report.split", params={"pages": 1})
    assert outcome.state == "FAILED" and outcome.spawned == ()
    assert outcome.error is not None and outcome.error.retryable is False
    assert outcome.error.message.startswith("workflow_id: this job belongs to no workflow")
