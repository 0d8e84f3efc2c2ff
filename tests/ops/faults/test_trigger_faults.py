"""The fault scenario of event triggers (scenario_check.py, ops/faults/triggers.py): a
trigger's source fed among the load while the trigger processor and a broker node are
SIGKILLed; every matching record's job fired once, every unparseable record in
jobs.triggers.dlq exactly once.

Its three nodes are its own: it takes the Kafka runtime, not the module's shared node,
which it would start for nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ops.faults.scenario_check import TRIGGER_FAULTS, assert_scenario_holds


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", TRIGGER_FAULTS)
def test_every_matching_record_has_one_job_through_the_kills(name: str, kafka_runtime: None,
                                                             tmp_path: Path) -> None:  # fmt: skip
    assert_scenario_holds(name, tmp_path, None)
