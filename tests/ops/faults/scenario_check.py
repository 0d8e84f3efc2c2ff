"""The fault-injection suite's short form: every scenario against the whole pipeline,
each asserting that no job is lost, that no job runs twice unflagged (without a DUPLICATE
event on jobs.events) and that no process exits on its own.

Each run has a Kafka cluster on free ports (shared by the module's scenarios whose fault
leaves it whole, a node killed or paused running again; its own for a network cut: three
nodes for the broker scenarios, one for the others), the pipeline as
processes and 600 jobs due over 6 s, and injects its fault (ops/faults/scenarios.py) once
a third of the jobs have fired, so it strikes in the middle of a flow of jobs. With
``CI=true`` a broker that cannot start fails the test; elsewhere it is skipped with the
reason. The long form is one command for people to run:

    jobstream faults run --scenario all --jobs 100000 --window 120s

docs/reliability.md has the numbers measured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobstream._ops.faults.cluster import FaultCluster
from jobstream._ops.faults.run import RunOptions, leaves_the_cluster_whole, run_scenario
from jobstream._ops.faults.scenarios import (
    CANCEL_WITHIN_MS,
    POISON_ATTEMPTS,
    POISON_JOBS,
    SCENARIOS,
)
from tests.ops.faults.shared_clusters import SharedClusters

JOBS = 600
WINDOW_S = 6.0
LEAD_S = 2.0
"""Each job is submitted 2 s before it falls due (the command's default is 5 s): the
pipeline is up and every group assigned before the first is submitted, and each of the
suite's runs waits the lead once."""
OUTAGE_S = 10.0
"""A broker node or the state disk down for 10 s in the suite, where `jobstream faults run`
keeps 20 s: still past the brokers' 9 s session timeout, so the controller fences the node
and its partitions' leadership moves, as in the long form."""


def evidence(result: dict[str, Any]) -> str:
    """What a failed assertion shows: the fault, the jobs in question with what jobs.events
    and the handler-side record hold of them, and where the components' logs are."""
    shown = [*result["ids"]["lost"][:2], *result["ids"]["unflagged"][:2]]
    exits = [(e["name"], e["code"], e["log_tail"][-500:]) for e in result["unexpected_exits"]]
    return (f"fault {result['fault']}; job ids {result['ids']}; unexpected exits {exits}; "
            f"component logs in {result['logs']}{histories(result, shown)}")  # fmt: skip


def histories(result: dict[str, Any], job_ids: list[str]) -> str:
    """What jobs.events and the handler-side record hold of each of ``job_ids``."""
    return "".join(f"\n  {job_id}:\n    " + "\n    ".join(
        result["evidence"][job_id]["events"] + result["evidence"][job_id]["runs"])
        for job_id in job_ids)  # fmt: skip


PROCESS_FAULTS = (
    "kill-timers",
    "kill-status-processor",
    "kill-retry-router",
    "kill-worker",
    "kill-worker-replaced",
    "kill-worker-for-good",
    "pause-timers",
    "pause-status-processor",
    "pause-retry-router",
    "pause-worker",
    "cut-off-worker",
)
"""The scenarios of test_process_faults.py; test_poison_faults.py has the poison ones,
test_broker_and_host_faults.py the others (but those COVERED by one of them). Modules
because ``make test`` gives each module to one test process (pytest-xdist's
``loadfile``): each runs its scenarios one at a time, so at most two runs, each with its
cluster and processes, share the machine."""
POISON_FAULTS = tuple(name for name, scenario in SCENARIOS.items() if scenario.poison)
COVERED = {"kill-broker": "triggers"}
"""Scenarios CI does not run alone, each to the one that holds it whole: the triggers
scenario kills the same broker node the same way, after its trigger processor (a 3-node
cluster is two minutes of the suite's twenty)."""
OTHER_FAULTS = tuple(sorted(
    (name for name in SCENARIOS if name not in (*PROCESS_FAULTS, *POISON_FAULTS, *COVERED)),
    key=lambda name: (leaves_the_cluster_whole(SCENARIOS[name]), SCENARIOS[name].nodes)))
"""In the order that keeps one cluster running at a time: the network cut's own first,
then the shared one of one node, then the shared one of three (sorted() is stable)."""


def scenario_test(names: tuple[str, ...]) -> Callable[..., None]:
    """The test of a module's scenarios, one run each: in the module,
    ``test_... = scenario_test(NAMES)``."""

    @pytest.mark.timeout(300)
    @pytest.mark.parametrize("name", names)
    def test(name: str, shared_clusters: SharedClusters, tmp_path: Path) -> None:
        scenario = SCENARIOS[name]
        shared = shared_clusters.of(scenario.nodes) if leaves_the_cluster_whole(scenario) else None
        assert_scenario_holds(name, tmp_path, shared)

    return test


def assert_scenario_holds(name: str, tmp_path: Path, shared: FaultCluster | None) -> None:
    """Run scenario ``name`` at the suite's size (on ``shared``, a running cluster, or on
    a cluster of its own) and check what it promises."""
    scenario = SCENARIOS[name]
    options = RunOptions(jobs=JOBS, window_s=WINDOW_S, lead_s=LEAD_S, outage_s=OUTAGE_S)
    result = run_scenario(scenario, options, tmp_path, shared=shared)
    show_figures(result)

    assert result["fault_error"] is None, evidence(result)
    assert result["submitted"] == JOBS
    assert result["ending"] == "all ended", evidence(result)
    assert result["lost"] == 0, evidence(result)
    assert result["unflagged_duplicate_runs"] == 0, evidence(result)
    assert result["unexpected_exits"] == [], evidence(result)
    assert result["started_early"] == 0, evidence(result)  # nothing before its instant
    if SCENARIOS[name].clocks:  # a lease runs on the status processor's clock, whatever it says
        assert result["lost_leases"] == 0, evidence(result)
    if SCENARIOS[name].long_share:  # a worker stopped mid-run stops its runs itself
        assert result["overlapping_runs"] == 0, evidence(result)
    flows = result.get("workflows")
    if flows is not None:  # every job of its workflows ended, each join in item order
        assert flows["submitted"] > 0 and flows["lost"] == 0, evidence(result)
        assert flows["dead_lettered"] == 0, evidence(result)
        assert flows["unflagged_duplicate_runs"] == 0, evidence(result)
    fed = result.get("triggers")
    if SCENARIOS[name].triggers:  # every matching record's job fired once, ended, ran once
        assert fed is not None and fed["matching"] > 0 and fed["unparseable"] > 0, fed
        assert fed["never_fired"] == 0 and fed["lost"] == 0, trigger_evidence(result)
        assert fed["fired_twice"] == 0, trigger_evidence(result)
        assert fed["unflagged_duplicate_runs"] == 0, trigger_evidence(result)
        assert fed["jobs_not_of_a_matching_record"] == 0, trigger_evidence(result)
        assert fed["dead_letters_missing"] == 0, trigger_evidence(result)
        assert fed["dead_lettered_twice"] == 0, trigger_evidence(result)
        assert fed["undelivered"] == [], fed
    expected = SCENARIOS[name].poison
    if expected is not None:
        poison = result["poison"]
        assert poison["ended"] == {expected.ends: POISON_JOBS}, poison_evidence(result)
        assert poison["starts"] == [expected.starts] * POISON_JOBS, poison_evidence(result)
        if SCENARIOS[name].restarts_workers:
            assert len(result["worker_deaths"]) >= POISON_ATTEMPTS, result["worker_deaths"]
        if expected.kind == "cancel":
            assert max(poison["cancelled_within_ms"]) <= CANCEL_WITHIN_MS, poison
        assert poison["most_starts_of_another_job"] <= 2, poison_evidence(result)


def show_figures(result: dict[str, Any]) -> None:
    """The run's figures on the test's output (``pytest -s``, or a failure's report)."""
    figures = {key: result[key] for key in ("submitted", "ended", "lost", "run_more_than_once",
                                            "flagged", "unflagged_duplicate_runs", "seconds")}
    fed = {key: value for key, value in (result.get("triggers") or {}).items() if key != "ids"}
    print(f"{result['scenario']}: {figures}" + (f"; triggers {fed}" if fed else ""))


def trigger_evidence(result: dict[str, Any]) -> str:
    """What a failed trigger check shows: the tally, the fault, and the history of two
    jobs in question."""
    fed = result["triggers"]
    shown = [*fed["ids"]["lost"][:2], *fed["ids"]["fired_twice"][:2]]
    shown = [job_id for job_id in shown if job_id in result["evidence"]]
    return (f"{fed}; fault {result['fault']}; logs in {result['logs']}"
            f"{histories(result, shown)}")  # fmt: skip


def poison_evidence(result: dict[str, Any]) -> str:
    """What a failed poison check shows: the tally, the worker deaths, and the history of
    the poison jobs and of two other jobs that started more than twice."""
    poison = result["poison"]
    shown = [*poison["ids_started_more_than_twice"][:2], *result["poison_ids"]]
    return (f"{poison}; deaths {result['worker_deaths']}; logs in {result['logs']}"
            f"{histories(result, shown)}")  # fmt: skip
