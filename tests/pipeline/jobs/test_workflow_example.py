"""docs/examples/submit_workflow_with_confluent_kafka.py against the broker: what it
produces is a workflow the timers accept, with the step ids jobstream derives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.commands import expand_workflow, step_ids
from tests.pipeline.jobs.intake import read_intake

EXAMPLE = (Path(__file__).parents[3] / "docs" / "examples"
           / "submit_workflow_with_confluent_kafka.py")  # fmt: skip


def test_the_plain_kafka_example_submits_a_valid_workflow(topics: Topics, unique_name: str) -> None:
    env = {**os.environ, "JOBSTREAM_BOOTSTRAP_SERVERS": topics.settings.bootstrap_servers,
           "JOBSTREAM_TOPIC_PREFIX": topics.settings.topic_prefix}  # fmt: skip
    run = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    workflow_id, *lines = run.stdout.splitlines()
    [record] = read_intake(topics, unique_name, 1)
    assert (record.key, record.event.name) == (workflow_id.encode(), "WorkflowSubmitted")
    assert record.partition == java_partition(record.key, topics.settings.timer_partitions)
    steps = expand_workflow(record.event.data, now_ms=now_ms())
    assert [name for name, _ in steps] == ["aggregate", "chart", "report"]
    assert dict(line.split("\t") for line in lines) == step_ids(record.event)
    report = steps[-1][1]
    assert report["spec"]["on_parent_failure"] == "RUN"
    assert report["spec"]["depends_on"] == [
        step_ids(record.event)[n] for n in ("aggregate", "chart")
    ]
