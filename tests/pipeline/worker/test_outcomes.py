"""Outcome events as docs/lifecycle.md defines them, and which errors may be retried."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._pipeline.errors import NonRetryableError, ValidationError
from jobstream._pipeline.model.records import evolve
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.results import ResultEncodingError, encode_result
from tests.pipeline.worker.executions import execution_requested

SERIALIZE, DESERIALIZE = make_serde()


class Teapot(Exception):
    retryable = False


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def round_trip(event: Event) -> dict[str, Any]:
    """Through the Avro serde, so every event is valid against the JobLifecycle schema."""
    return DESERIALIZE(SERIALIZE(event)).data


@pytest.mark.parametrize(
    ("exc", "error_type", "retryable"),
    [
        (ValueError("bad"), "ValueError", True),
        (NonRetryableError("no"), "jobstream._pipeline.errors.NonRetryableError", False),
        (ValidationError("spec.params", "x"), "jobstream._pipeline.errors.ValidationError", False),
        (ResultEncodingError("x"), "jobstream._pipeline.worker.results.ResultEncodingError", False),
        (Teapot("tea"), f"{__name__}.Teapot", False),
        (TimeoutError("own"), "TimeoutError", True),
    ],
)
def test_errors_are_classified_by_their_retryable_attribute(
    exc: Exception, error_type: str, retryable: bool
) -> None:
    described = outcomes.describe_error(raised(exc))
    assert (described.error_type, described.retryable) == (error_type, retryable)
    assert described.message == str(exc)
    assert described.traceback and "raise exc" in described.traceback


def test_long_messages_and_tracebacks_are_bounded_keeping_the_tail() -> None:
    described = outcomes.describe_error(raised(ValueError("m" * 100_000)))
    assert len(described.message) == outcomes.MAX_MESSAGE_CHARS
    assert described.traceback is not None
    assert len(described.traceback) <= outcomes.MAX_TRACEBACK_CHARS
    assert described.traceback.rstrip().endswith("m")


def test_started_and_heartbeat() -> None:
    execution = execution_requested().data
    started = round_trip(outcomes.started(execution, worker_id="w", now_ms=5))
    assert started["kind"] == "STARTED" and started["execution"] == execution
    assert (started["execution_id"], started["attempt"], started["epoch"], started["worker_id"]) \
        == (execution["execution_id"], 1, execution["epoch"], "w")  # fmt: skip
    beat = round_trip(outcomes.heartbeat(execution, worker_id="w", now_ms=6))
    assert beat["kind"] == "HEARTBEAT" and beat["execution"] is None
    assert (beat["execution_id"], beat["epoch"], beat["at_ms"]) == (
        execution["execution_id"], execution["epoch"], 6)  # fmt: skip


def test_succeeded_failed_timed_out_and_skipped() -> None:
    execution = execution_requested(attempt=2).data
    done = round_trip(outcomes.succeeded(execution, encode_result({"a": 1}),
                                         results_topic="jobs.results", worker_id="w",
                                         now_ms=7))  # fmt: skip
    assert (done["kind"], done["result"], done["result_uri"]) == ("SUCCEEDED", '{"a":1}', None)
    large = round_trip(outcomes.succeeded(execution, encode_result(b"raw"),
                                          results_topic="p.jobs.results", worker_id="w",
                                          now_ms=7))  # fmt: skip
    assert (large["result"], large["result_uri"]) == (
        None, f"kafka://p.jobs.results/{execution['job_id']}")

    error = outcomes.describe_error(raised(NonRetryableError("nope")))
    failed = round_trip(outcomes.failed(execution, error, worker_id="w", now_ms=8))
    assert failed["kind"] == "FAILED" and failed["execution"] == execution
    assert failed["error"]["retryable"] is False and failed["error"]["attempt"] == 2
    assert failed["error"]["worker_id"] == "w" and failed["error"]["at_ms"] == 8

    late = round_trip(outcomes.timed_out(execution, 1.5, worker_id="w", now_ms=9))
    assert late["kind"] == "TIMED_OUT" and late["execution"] == execution
    assert late["error"]["error_type"] == "Timeout" and late["error"]["retryable"] is True
    assert "1.5 s" in late["error"]["message"]

    skipped = round_trip(outcomes.skipped(execution, worker_id="w", now_ms=10))
    assert (skipped["kind"], skipped["result"], skipped["detail"]) == (
        "SUCCEEDED", None, "skipped: previous run still running")  # fmt: skip


def test_events_are_keyed_like_every_record_of_the_job() -> None:
    execution = execution_requested().data
    assert outcomes.event_key(execution) == execution["job_id"].encode()
    assert outcomes.event_key(evolve(execution, workflow_id="WF")) == b"WF"
