"""``ctx.spawn`` in the whole pipeline, on the real broker: a handler that spawns three
children and then kills its own process (``--isolation process``) is retried, spawns them
again, and each child is one job that runs once; the step after the spawner starts once
every child has ended."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import orjson
import pytest

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.labels import STEP_LABEL
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL, spawned_job_id
from tests.support.reader import DESERIALIZE, TopicReader
from tests.support.stack import running_stack, settled, topics_fixture

APP = "tests.support.spawn_app"
OWNER = "spawns"

pipeline_topics = topics_fixture("spawn")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Timers, status processor, retry router, and one worker of both types whose handlers
    run in child processes."""
    base = free_ports(4)
    parts = [*components(base, app=APP, job_types=(), lease_s=3),
             worker("spawn.parent", "spawner", base + 3, app=APP, concurrency=2,
                    extra=("--type", "spawn.child", "--isolation", "process",
                           "--heartbeat", "0.5s"))]  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


def of_workflow(settings: Settings, topic: str, partitions: int,
                workflow_id: str) -> list[Event]:  # fmt: skip
    """The records of ``topic`` keyed by ``workflow_id``, decoded: the module's topics
    outlive a run on a shared broker, and hold other runs' records (of other schemas)."""
    reader = TopicReader(settings, topic, partitions)
    try:
        return [DESERIALIZE(message.value()) for message in reader.raw_to_end()
                if message.key() == workflow_id.encode()]  # fmt: skip
    finally:
        reader.close()


def test_the_children_of_a_run_that_crashed_and_was_retried_are_submitted_once(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    workflow_id = f"fan-out-{uuid.uuid4().hex[:12]}"  # the module's topics outlive a run
    step = {"name": "fan-out", "job_type": "spawn.parent",
            "params": {"count": 3, "child_sleep_s": 1.0},
            "retry": {"max_attempts": 2, "initial_backoff_ms": 200, "jitter": 0}}  # fmt: skip
    after = {"name": "after", "depends_on": ["fan-out"], "job_type": "spawn.child",
             "params": {"item": -1}}  # fmt: skip
    with JobClient(settings) as client:
        submitted = client.submit_workflow([step, after], owner=OWNER, workflow_id=workflow_id)
    parent_id = submitted.steps["fan-out"]
    children = {f"child {n}": spawned_job_id(OWNER, workflow_id, "fan-out", str(n))
                for n in range(3)}  # fmt: skip
    after_id = submitted.steps["after"]
    done = settled(settings, OWNER, {"parent": parent_id, "after": after_id, **children},
                   {"parent": {"SUCCEEDED"}, "after": {"SUCCEEDED"},
                    **{label: {"SUCCEEDED"} for label in children}}, timeout_s=90)  # fmt: skip

    parent = done["parent"]
    assert parent.attempt == 2
    assert orjson.loads(parent.result or "[]") == list(children.values())

    topics = pipeline_topics
    intake = of_workflow(settings, topics.intake, settings.timer_partitions, workflow_id)
    events = of_workflow(settings, topics.events, settings.events_partitions, workflow_id)
    lifecycle = [event.data for event in events]
    spawned = [e.data for e in intake if e.name == "JobSubmitted"
               and e.data["spec"]["labels"].get(SPAWNED_BY_LABEL) == parent_id]  # fmt: skip
    started = [r for r in lifecycle
               if r["job_id"] in children.values() and r["kind"] == "STARTED"]  # fmt: skip
    failures = [(r["attempt"], r["error"]["error_type"]) for r in lifecycle
                if r["job_id"] == parent_id and r["kind"] == "FAILED"]  # fmt: skip
    assert failures == [(1, "WorkerCrashed")], "its first attempt's process died"
    # Both attempts spawned the three (the first before its process died): the timers
    # kept the first of each id.
    assert len(spawned) == 6
    assert sorted({r["job_id"] for r in spawned}) == sorted(children.values())
    assert {r["spec"]["labels"][STEP_LABEL] for r in spawned} == {f"fan-out/{n}" for n in range(3)}
    assert sorted(r["job_id"] for r in started) == sorted(children.values()), "each ran once"
    items = sorted(orjson.loads(done[label].result or "{}")["item"] for label in children)
    assert items == [0, 1, 2]
    ended = [r["at_ms"] for r in lifecycle
             if r["job_id"] in children.values() and r["kind"] == "SUCCEEDED"]  # fmt: skip
    [after_start] = [r["at_ms"] for r in lifecycle
                     if r["job_id"] == after_id and r["kind"] == "STARTED"]  # fmt: skip
    assert after_start >= max(ended), "the step after the spawner waited for its children"
