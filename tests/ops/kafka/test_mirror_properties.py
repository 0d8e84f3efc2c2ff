"""MirrorMaker 2's configuration for a standby (ops/kafka/mirror.py): what it copies, how,
and the flows it refuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobstream._ops.command import app
from jobstream._ops.kafka.mirror import Flow, healthy, mm2_properties
from jobstream._pipeline.errors import BrokerError


def _flow(**changes: object) -> Flow:
    fields: dict[str, object] = {"source": "primary", "source_bootstrap": "10.0.0.1:9092",
                                 "target": "standby",
                                 "target_bootstrap": "10.8.0.1:9092"}  # fmt: skip
    fields.update(changes)
    return Flow.of_deployment("prod.", **fields)  # type: ignore[arg-type]


def _read(text: str) -> dict[str, str]:
    """A properties file as Java reads it: ``\\x`` is ``x``."""
    pairs = dict(line.split("=", 1) for line in text.splitlines())
    return {key: re.sub(r"\\(.)", r"\1", value) for key, value in pairs.items()}


def test_a_deployments_topics_and_groups_are_copied_under_their_own_names() -> None:
    properties = _read(mm2_properties(_flow()))
    assert properties["primary->standby.enabled"] == "true"
    assert properties["standby->primary.enabled"] == "false"
    assert properties["replication.policy.class"].endswith(".IdentityReplicationPolicy")
    topics = re.compile(properties["primary->standby.topics"])
    assert topics.fullmatch("prod.jobs.timers.changelog")
    assert topics.fullmatch("prod.jobs.exec.report.generate.normal")
    assert not topics.fullmatch("prodXjobs.intake"), "the prefix's dot is a dot"
    assert not topics.fullmatch("other.jobs.intake")
    groups = re.compile(properties["primary->standby.groups"])
    assert groups.fullmatch("prod.jobstream.timers")
    assert not groups.fullmatch("prod.faults-observer-1")


def test_only_committed_records_are_copied_and_offsets_follow_within_a_second() -> None:
    properties = _read(mm2_properties(_flow()))
    assert properties["primary.consumer.isolation.level"] == "read_committed"
    assert properties["sync.group.offsets.enabled"] == "true"
    assert properties["emit.checkpoints.interval.seconds"] == "1"
    assert properties["standby.offset.flush.interval.ms"] == "1000"


def test_a_flow_that_cannot_be_named_or_matched_is_refused() -> None:
    with pytest.raises(BrokerError, match="--source-alias"):
        _flow(source="pri mary")
    with pytest.raises(BrokerError, match="both 'standby'"):
        _flow(source="standby")
    with pytest.raises(BrokerError, match="--topics"):
        Flow(source="a", source_bootstrap="x:1", target="b", target_bootstrap="y:1",
             topics="jobs.(", groups=".*")  # fmt: skip


def test_a_flow_is_healthy_once_its_connectors_and_source_task_run() -> None:
    running = {"connector-MirrorSourceConnector": "RUNNING",
               "connector-MirrorCheckpointConnector": "RUNNING"}  # fmt: skip
    assert not healthy(running)
    assert healthy({**running, "task-MirrorSourceConnector-0": "RUNNING"})
    assert not healthy({**running, "task-MirrorSourceConnector-0": "RUNNING",
                        "task-MirrorCheckpointConnector-0": "FAILED"})  # fmt: skip


def test_the_command_names_a_bad_alias_and_a_missing_flow(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["kafka", "mirror", "up", "--source", "a:1", "--target", "b:1",
                              "--source-alias", "pri mary", "--home", str(tmp_path)])  # fmt: skip
    assert bad.exit_code == 1
    assert "--source-alias 'pri mary'" in bad.output
    assert not (tmp_path / "pid").exists(), "nothing was started"
    status = runner.invoke(app, ["kafka", "mirror", "status", "--home", str(tmp_path)])
    assert status.exit_code == 1
    assert "no flow in" in status.output
