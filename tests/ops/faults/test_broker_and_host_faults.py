"""The fault scenarios that strike a broker node, the timers' state on disk or the workers'
clocks (scenario_check.py)."""

from __future__ import annotations

from jobstream._ops.faults.scenarios import SCENARIOS
from tests.ops.faults.scenario_check import (
    COVERED,
    OTHER_FAULTS,
    POISON_FAULTS,
    PROCESS_FAULTS,
    scenario_test,
)


def test_the_modules_run_every_scenario_once_or_one_that_holds_it() -> None:
    modules = PROCESS_FAULTS + POISON_FAULTS + OTHER_FAULTS
    assert sorted(modules + tuple(COVERED)) == sorted(SCENARIOS)
    assert set(COVERED.values()) <= set(OTHER_FAULTS), "a covering scenario runs"


test_no_job_is_lost_and_no_duplicate_run_goes_unflagged = scenario_test(OTHER_FAULTS)
