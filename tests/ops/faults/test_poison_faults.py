"""The fault scenarios whose jobs take their workers down (scenario_check.py): beside the
checks of every scenario, each poison job ends dead-lettered after one start per
attempt, and no other job starts more than twice."""

from __future__ import annotations

from tests.ops.faults.scenario_check import POISON_FAULTS, scenario_test

test_poison_jobs_end_after_their_attempts_and_the_others_succeed = scenario_test(POISON_FAULTS)
