"""The fault scenario of event triggers (scenario_check.py, ops/faults/triggers.py): a
trigger's source fed among the load while the trigger processor and a broker node are
SIGKILLed; every matching record's job fired once, every unparseable record in
jobs.triggers.dlq."""

from __future__ import annotations

from tests.ops.faults.scenario_check import TRIGGER_FAULTS, scenario_test

test_every_matching_record_has_one_job_through_the_kills = scenario_test(TRIGGER_FAULTS)
