"""The fault scenarios whose jobs take their workers down (scenario_check.py): beside the
checks of every scenario, each poison job ends dead-lettered after one start per
attempt, and no other job starts more than twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.faults.cluster import FaultCluster
from tests.ops.faults.scenario_check import POISON_FAULTS, assert_scenario_holds


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", POISON_FAULTS)
def test_poison_jobs_end_after_their_attempts_and_the_others_succeed(
    name: str, shared_cluster: FaultCluster, tmp_path: Path
) -> None:
    assert_scenario_holds(name, tmp_path, shared_cluster)
