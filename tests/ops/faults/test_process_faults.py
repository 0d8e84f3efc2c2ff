"""The fault scenarios that kill or pause the pipeline's own processes (scenario_check.py)."""

from __future__ import annotations

from tests.ops.faults.scenario_check import PROCESS_FAULTS, scenario_test

test_no_job_is_lost_and_no_duplicate_run_goes_unflagged = scenario_test(PROCESS_FAULTS)
