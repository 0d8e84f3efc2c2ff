"""A job type whose topic collides with another type's, on the real broker.

Kafka refuses a topic whose name differs from an existing one only by ``.`` versus ``_``:
``jobs.exec.col.a_b.normal`` once ``jobs.exec.col.a.b.normal`` exists. A job of type
``col.a_b`` is refused at firing, to jobs.intake.dlq with a reason naming the type it
collides with, its status CANCELLED, and the partition goes on firing the jobs after it.
"""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka.admin import colliding
from jobstream._pipeline.timers.processor import refusal_reason
from jobstream._pipeline.topics import Topics
from tests.support.reader import TopicReader
from tests.support.refusals import refused_after_a_first_type
from tests.support.waiting import wait_for


def test_a_colliding_type_is_dead_lettered_and_the_partition_goes_on(
        topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    settings = topics.settings
    colliding, reason = refused_after_a_first_type(settings, topics, tmp_path, first="col.a.b",
                                                   refused="col.a_b", after="data.process")
    assert "spec.job_type: 'col.a_b'" in reason
    assert topics.execution("col.a.b", "normal") in reason and "'col.a.b'" in reason
    dead = TopicReader(settings, topics.intake_dlq, settings.dlq_partitions)
    refused = wait_for(lambda: dead.poll(), what="the dead letter decoded")
    dead.close()
    assert [r["job_id"] for r in refused] == [colliding.data["job_id"]]
    assert refused[0]["spec"]["job_type"] == "col.a_b"


def test_names_that_differ_only_by_dot_and_underscore_collide() -> None:
    present = ["jobs.exec.a.b.normal", "jobs.exec.a_c.normal", "jobs.exec.a_b.normal"]
    assert colliding("jobs.exec.a_b.normal", present) == ["jobs.exec.a.b.normal"]
    assert colliding("jobs.exec.a.c.normal", present) == ["jobs.exec.a_c.normal"]
    assert colliding("jobs.exec.ab.normal", present) == []


def test_the_reason_names_both_types() -> None:
    topics = Topics(Settings(topic_prefix="p."))
    reason = refusal_reason(topics, "a_b", "p.jobs.exec.a_b.high",
                            "collides with existing topic p.jobs.exec.a.b.high")  # fmt: skip
    assert reason.startswith("spec.job_type: 'a_b' cannot be routed: its topic p.jobs.exec.a_b")
    assert "(job type 'a.b': Kafka treats '.' and '_' in topic names alike)" in reason
