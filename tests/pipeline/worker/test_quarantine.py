"""Which runs are suspects, and how a suspect gets the process to itself."""

from __future__ import annotations

from jobstream._pipeline.model.records import ErrorInfo, ExecutionRequested, JobSpec
from jobstream._pipeline.worker.quarantine import Quarantine, is_suspect


def _error(error_type: str) -> ErrorInfo:
    return ErrorInfo(attempt=1, error_type=error_type, message="", at_ms=0)


def _failed(*error_types: str) -> ExecutionRequested:
    return ExecutionRequested(job_id="j", execution_id="e", scheduled_at_ms=0, fired_at_ms=0,
                              spec=JobSpec(job_type="t", owner="o"),
                              errors=[_error(kind) for kind in error_types])  # fmt: skip


def _after(error_type: str | None) -> ExecutionRequested:
    return _failed() if error_type is None else _failed("Boom", error_type)


def test_a_run_is_a_suspect_when_its_last_attempt_lost_its_process() -> None:
    assert is_suspect(_after("LeaseExpired"))
    assert is_suspect(_after("WorkerCrashed"))
    assert not is_suspect(_after(None)), "a first attempt"
    assert not is_suspect(_after("ValueError")), "a handler that raised"
    assert not is_suspect(_after("WorkerStopped")), "a worker stopped on purpose"
    assert not is_suspect(_failed())
    crashed_then_raised = _failed("LeaseExpired", "Boom")
    assert not is_suspect(crashed_then_raised), "only the last attempt counts"


def test_a_held_suspect_waits_for_the_others_and_then_runs_alone() -> None:
    quarantine: Quarantine[str] = Quarantine()
    running = {"e1": "a", "e2": "b"}
    assert not quarantine.blocks(running)
    quarantine.hold("suspect")
    assert quarantine.blocks(running), "nothing starts while it waits for the others"
    assert quarantine.take_held(running) is None
    del running["e1"]
    assert quarantine.take_held(running) is None, "one run is still beside it"
    del running["e2"]
    assert not quarantine.blocks(running)
    assert quarantine.take_held(running) == "suspect"
    quarantine.alone = "e3"
    running["e3"] = "suspect"
    assert quarantine.blocks(running), "nothing starts beside the suspect"
    del running["e3"]
    assert not quarantine.blocks(running) and quarantine.alone is None
