"""The handler-side record and the fault app's handler, without a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._ops.faults import app as fault_app
from jobstream._ops.faults.journal import RUNS_DIR_ENV, Journal, Run, read_runs
from jobstream._ops.faults.scenarios import SCENARIOS
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.model.records import ExecutionRequested, JobSpec
from jobstream._pipeline.worker.context import build_context


def execution(attempt: int = 1, params: str = "{}") -> ExecutionRequested:
    return ExecutionRequested(job_id="J1", execution_id=f"E{attempt}", attempt=attempt, epoch=7,
                              scheduled_at_ms=0, fired_at_ms=0,
                              spec=JobSpec(job_type=fault_app.JOB_TYPE, owner="faults",
                                           params=params))  # fmt: skip


def test_runs_from_every_process_file_are_read_back(tmp_path: Path) -> None:
    Journal(tmp_path).append(Run("J1", "E1", 1, "w0", 5, 15, 100, True))
    Journal(tmp_path).append(Run("J1", "E1", 1, "w1", 20, 30, 101, True))
    assert sorted(r.worker_id for r in read_runs(tmp_path)) == ["w0", "w1"]


def test_the_handler_records_its_run_and_fails_only_the_attempts_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fault_app, "journal", Journal(tmp_path))
    params = '{"fail_until_attempt": 2}'
    first = build_context(execution(1, params), worker_id="w0", started_ms=0, timeout_s=None)
    with pytest.raises(fault_app.PlannedFailure):
        fault_app.record(first)
    second = build_context(execution(2, params), worker_id="w0", started_ms=0, timeout_s=None)
    fault_app.record(second)
    runs = read_runs(tmp_path)
    assert [(r.execution_id, r.ok) for r in runs] == [("E1", False), ("E2", True)]
    assert all(r.end_ms - r.start_ms >= 10 for r in runs)


def test_without_a_folder_the_journal_refuses_to_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNS_DIR_ENV, raising=False)
    with pytest.raises(ConfigurationError, match=RUNS_DIR_ENV):
        Journal().append(Run("J1", "E1", 1, "w0", 0, 1, 1, True))


def test_the_registry_holds_every_scenario_and_the_broker_ones_need_3_nodes() -> None:
    assert set(SCENARIOS) == {
        "kill-timers", "kill-status-processor", "kill-retry-router", "kill-worker",
        "kill-worker-replaced", "kill-worker-for-good", "corrupt-timer-state",
        "delete-timer-state", "full-state-disk", "skew-clocks", "pause-timers",
        "pause-status-processor", "pause-retry-router", "pause-worker", "cut-off-worker",
        "kill-broker", "pause-broker", "cut-off-broker", "poison-kill", "poison-kill-mid-run",
        "poison-hang", "poison-cancel", "workflows", "triggers",
    }  # fmt: skip
    broker = {name for name, scenario in SCENARIOS.items() if scenario.nodes == 3}
    assert broker == {"kill-broker", "pause-broker", "cut-off-broker", "triggers"}
