"""The fault-injection suite's short form: every scenario against the whole pipeline,
each asserting that no job is lost, that no job runs twice unflagged (without a DUPLICATE
event on jobs.events) and that no process exits on its own.

Each run starts its own Kafka cluster on free ports (one node, or three for the broker
scenarios), the pipeline as processes and 600 jobs due over 8 s, and injects its fault
(ops/faults/scenarios.py) once a third of the jobs have fired, so it strikes in the middle
of a flow of jobs. With ``CI=true`` a broker that cannot start fails the test; elsewhere it
is skipped with the reason. The long form is one command for people to run:

    jobstream faults run --scenario all --jobs 100000 --window 120s

docs/reliability.md has the numbers measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ops.faults.run import RunOptions, run_scenario
from ops.faults.scenarios import SCENARIOS
from ops.kafka import runtime
from pipeline.errors import BrokerError
from tests.conftest import IN_CI

JOBS = 600
WINDOW_S = 8.0


@pytest.fixture(scope="module")
def kafka_runtime() -> None:
    """Java and the Kafka jars, which every run's own cluster needs."""
    try:
        runtime.java_executable()
        runtime.ensure_jars()
    except BrokerError as exc:
        if IN_CI:
            pytest.fail(f"Kafka cannot run here: {exc}")
        pytest.skip(f"Kafka cannot run here: {exc}")


def evidence(result: dict[str, Any]) -> str:
    """What a failed assertion shows: the fault, the jobs in question with what jobs.events
    and the handler-side record hold of them, and where the components' logs are."""
    shown = [*result["ids"]["lost"][:2], *result["ids"]["unflagged"][:2]]
    histories = "".join(f"\n  {job_id}:\n    " + "\n    ".join(
        result["evidence"][job_id]["events"] + result["evidence"][job_id]["runs"])
        for job_id in shown)  # fmt: skip
    exits = [(e["name"], e["code"], e["log_tail"][-500:]) for e in result["unexpected_exits"]]
    return (f"fault {result['fault']}; job ids {result['ids']}; unexpected exits {exits}; "
            f"component logs in {result['logs']}{histories}")  # fmt: skip


def in_two_queues() -> list[pytest.param]:  # type: ignore[valid-type]
    """The scenarios as parameters, dealt into two xdist groups (``make test`` runs tests
    in parallel): each group runs one scenario at a time, so that no more than two runs,
    each with its own cluster and processes, share the machine; the three-node ones are
    dealt first, so each queue gets a share of the longest."""
    ordered = sorted(SCENARIOS, key=lambda name: -SCENARIOS[name].nodes)
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"faults-{i % 2}"))
            for i, name in enumerate(ordered)]  # fmt: skip


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", in_two_queues())
def test_no_job_is_lost_and_no_duplicate_run_goes_unflagged(
    name: str, kafka_runtime: None, tmp_path: Path
) -> None:
    result = run_scenario(SCENARIOS[name], RunOptions(jobs=JOBS, window_s=WINDOW_S), tmp_path)

    assert result["fault_error"] is None, evidence(result)
    assert result["submitted"] == JOBS
    assert result["ending"] == "all ended", evidence(result)
    assert result["lost"] == 0, evidence(result)
    assert result["unflagged_duplicate_runs"] == 0, evidence(result)
    assert result["unexpected_exits"] == [], evidence(result)
