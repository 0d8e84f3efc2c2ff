"""The fault scenarios that kill or pause the pipeline's own processes (scenario_check.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.faults.cluster import FaultCluster
from tests.ops.faults.scenario_check import PROCESS_FAULTS, assert_scenario_holds


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", PROCESS_FAULTS)
def test_no_job_is_lost_and_no_duplicate_run_goes_unflagged(
    name: str, shared_cluster: FaultCluster, tmp_path: Path
) -> None:
    assert_scenario_holds(name, tmp_path, shared_cluster)
