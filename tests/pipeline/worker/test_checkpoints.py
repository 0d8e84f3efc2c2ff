"""Checkpoints from a handler, no broker: the state checked and encoded, what the next attempt
reads back, the reporter sending a checkpoint with the progress beside it, and the worker's
own loop (jobstream.testing) writing it in its transactions, on the run's failure, and a
tombstone on its success."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

import jobstream.testing
from jobstream._pipeline.errors import InvalidArgumentError, ValidationError
from jobstream._pipeline.model.records import Checkpoint, evolve
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.checkpoints import (
    MAX_CHECKPOINT_BYTES,
    CheckpointReport,
    encode_state,
    resume_value,
)
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.processes import ProcessExecutor
from jobstream._pipeline.worker.progress import ProgressReport, ProgressReporter
from tests.pipeline.worker.executions import execution_requested
from tests.support.checkpoint_app import app

APP = "tests.support.checkpoint_app"

_, DESERIALIZE = make_serde()


def saved(state: bytes, *, json: bool = True) -> Checkpoint:
    return Checkpoint(state=state, json=json, attempt=1, execution_id="x1", at_ms=1)


# -- the state ------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [{"done": 50, "cursor": "abc"}, [1, 2], "page 7", 42, None])
def test_a_json_value_is_saved_as_its_json_text_and_read_back_as_it_was(state: Any) -> None:
    encoded, is_json = encode_state(state)
    assert (encoded, is_json) == (orjson.dumps(state), True)
    assert resume_value(saved(encoded)) == state


@pytest.mark.parametrize("state", [b"\x00\x01", bytearray(b"\x00\x01"), memoryview(b"\x00\x01")])
def test_bytes_are_saved_as_they_are_and_read_back_as_bytes(state: Any) -> None:
    encoded, is_json = encode_state(state)
    assert (encoded, is_json) == (b"\x00\x01", False)
    assert resume_value(saved(encoded, json=False)) == b"\x00\x01"


def test_no_checkpoint_resumes_from_none() -> None:
    assert resume_value(None) is None


def test_a_checkpoint_of_64_kib_is_taken_and_one_byte_more_refused_naming_the_state() -> None:
    assert encode_state(b"x" * MAX_CHECKPOINT_BYTES)[0] == b"x" * MAX_CHECKPOINT_BYTES
    with pytest.raises(ValueError, match=r"^state: 65,537 bytes encoded, more than the 65,536") \
            as caught:  # fmt: skip
        encode_state(b"x" * (MAX_CHECKPOINT_BYTES + 1))
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.field == "state"
    with pytest.raises(InvalidArgumentError, match=r"^state: "):
        encode_state({"rows": ["x" * 1000] * 70})  # its JSON text is what counts


@pytest.mark.parametrize("state", [object(), {"when": {1, 2}}, {1: "non-string key"}])
def test_a_value_that_is_not_json_nor_bytes_is_refused_naming_the_state(state: Any) -> None:
    with pytest.raises(ValueError, match=r"^state: expected bytes or a JSON value") as caught:
        encode_state(state)
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.field == "state"


def test_a_checkpoint_whose_json_is_broken_is_a_validation_error_naming_it() -> None:
    with pytest.raises(ValidationError) as caught:
        resume_value(saved(b"{not json"))
    assert caught.value.field == "resume_from.state" and caught.value.retryable is False


# -- the context ----------------------------------------------------------------------------


def test_the_context_hands_over_what_the_execution_resumes_from_and_takes_checkpoints() -> None:
    reports: list[object] = []
    execution = evolve(execution_requested(attempt=2).data,
                       resume_from=saved(b'{"done": 50}'))  # fmt: skip
    ctx = build_context(execution, worker_id="w", started_ms=0, timeout_s=30,
                        progress_sink=reports.append)  # fmt: skip
    assert ctx.resume_from == {"done": 50}
    ctx.checkpoint({"done": 60})
    ctx.checkpoint(b"raw")
    assert [(r.state, r.json) for r in reports if isinstance(r, CheckpointReport)] == [
        (b'{"done":60}', True), (b"raw", False)]  # fmt: skip
    with pytest.raises(InvalidArgumentError):
        ctx.checkpoint(object())
    assert len(reports) == 2, "a refused checkpoint reaches no one"
    first = build_context(execution_requested().data, worker_id="w", started_ms=0, timeout_s=1)
    assert first.resume_from is None
    first.checkpoint({"done": 1})  # built by hand: dropped, no error


# -- the reporter ---------------------------------------------------------------------------


def test_a_checkpoint_leaves_with_the_progress_beside_it_and_the_interval_holds_both() -> None:
    reporter = ProgressReporter(interval_s=0.25)
    ckpt = CheckpointReport(b"1", True, 1)
    reporter.put(ckpt)
    assert reporter.due(10.0) == (None, ckpt), "a checkpoint alone leaves at once"
    later = CheckpointReport(b"2", True, 2)
    reporter.put(later)
    reporter.put(ProgressReport(0.55, None, 3))
    assert reporter.due(10.1) is None, "within the interval"
    assert reporter.due(10.25) == (ProgressReport(0.55, None, 3), later), "on one HEARTBEAT"
    last = CheckpointReport(b"3", True, 4)
    reporter.put(last)
    assert reporter.last(10.26) == (None, last), "the run ended: its last one whatever the interval"
    assert reporter.last(10.27) is None


# -- a child process ------------------------------------------------------------------------


@pytest.fixture
def child(child_processes: None) -> Iterator[tuple[ProcessExecutor, list[object],
                                                   queue.SimpleQueue[Finished]]]:  # fmt: skip
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor = ProcessExecutor(APP, 1, ends.put)
    yield executor, [], ends
    executor.close()


def test_a_handler_in_a_child_process_checkpoints_across_the_pipe_and_resumes(
    child: tuple[ProcessExecutor, list[object], queue.SimpleQueue[Finished]],
) -> None:
    executor, reports, ends = child
    execution = evolve(execution_requested(job_type="ckpt.isolated", attempt=2).data,
                       resume_from=saved(b'{"done": 70}'))  # fmt: skip
    ctx = build_context(execution, worker_id="w", started_ms=0, timeout_s=60,
                        progress_sink=reports.append)  # fmt: skip
    executor.submit(1, app.get("ckpt.isolated"), ctx)
    end = ends.get(timeout=60)
    assert end.result is not None and orjson.loads(end.result.inline or b"")["began_at"] == 70
    assert [orjson.loads(r.state) for r in reports if isinstance(r, CheckpointReport)] == [
        {"done": 80},
        {"done": 90},
        {"done": 100},
    ], "every one crossed before the end"


# -- the worker's loop ----------------------------------------------------------------------


def test_a_failed_run_carries_its_last_checkpoint_and_the_next_attempt_resumes_from_it() -> None:
    first = jobstream.testing.run(app, "ckpt.steps", params={"fail_at": 55}, job_id="job-1")
    assert first.state == "FAILED"
    assert first.checkpoints == tuple({"done": d} for d in range(10, 60, 10))
    end = first.events[-1]
    assert end.checkpoint is not None and orjson.loads(end.checkpoint.state) == {"done": 50}
    assert (end.checkpoint.attempt, end.checkpoint.execution_id) == (1, end.execution_id)
    carried = [orjson.loads(e.checkpoint.state)["done"] for e in first.events
               if e.kind == "HEARTBEAT" and e.checkpoint is not None]  # fmt: skip
    assert carried and carried[-1] == 50, "the last one left on a HEARTBEAT before the end"

    second = jobstream.testing.run(app, "ckpt.steps", attempt=2, job_id="job-1",
                                   resume_from=first.checkpoints[-1])  # fmt: skip
    assert second.state == "SUCCEEDED"
    assert second.result == {"began_at": 50, "attempt": 2, "pid": second.result["pid"]}
    assert second.checkpoints == tuple({"done": d} for d in range(60, 110, 10))
    assert second.events[-1].checkpoint is None, "a success hands nothing on"


@pytest.mark.parametrize(
    ("job_type", "resumed"), [("ckpt.async", {"done": 50}), ("ckpt.bytes", (50).to_bytes(4, "big"))]
)
def test_async_and_bytes_checkpoints_resume_alike(job_type: str, resumed: Any) -> None:
    first = jobstream.testing.run(app, job_type, params={"fail_at": 55})
    assert (first.state, first.checkpoints[-1]) == ("FAILED", resumed)
    second = jobstream.testing.run(app, job_type, attempt=2, resume_from=resumed)
    assert second.state == "SUCCEEDED" and second.result["began_at"] == 50


def test_a_refused_checkpoint_raises_in_the_handler() -> None:
    outcome = jobstream.testing.run(app, "ckpt.bad", params={"size": MAX_CHECKPOINT_BYTES + 1})
    assert outcome.result == (
        "refused: state: 65,537 bytes encoded, more than the 65,536 a "
        "checkpoint may hold: save where the work is, not the work"
    )
    assert outcome.checkpoints == ()
    with pytest.raises(InvalidArgumentError, match=r"^state: "):
        jobstream.testing.run(app, "ckpt.steps", attempt=2, resume_from=object())


def test_checkpoints_go_to_jobs_checkpoints_in_the_transactions_and_a_success_ends_them() -> None:
    failing = execution_requested(job_type="ckpt.steps", params={"fail_at": 35}, job_id="j-1")
    due_ms = failing.data.scheduled_at_ms
    driver = WorkerDriver(app, now_ms=due_ms)
    topics = Topics(driver.settings)
    [first] = driver.fire(failing)
    driver.run_until(lambda: "FAILED" in driver.kinds(first))
    kept = [
        (m.key(), DESERIALIZE(m.value()).data) for m in driver.broker.records(topics.checkpoints)
    ]
    assert [key for key, _ in kept] == [b"j-1"] * len(kept) and kept
    assert orjson.loads(kept[-1][1].state) == {"done": 30}
    assert all(c.execution_id == first for _, c in kept)

    retry = evolve(execution_requested(job_type="ckpt.steps", job_id="j-1", attempt=2,
                                       due_ms=due_ms).data, resume_from=kept[-1][1])  # fmt: skip
    [second] = driver.fire(type(failing)("ExecutionRequested", retry))
    driver.run_until(lambda: "SUCCEEDED" in driver.kinds(second))
    last = driver.broker.records(topics.checkpoints)[-1]
    assert (last.key(), last.value()) == (b"j-1", None), "a tombstone with the SUCCEEDED"
    driver.shut_down()
