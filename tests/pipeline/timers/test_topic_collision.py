"""A job type whose topic collides with another type's, on the real broker.

Kafka refuses a topic whose name differs from an existing one only by ``.`` versus ``_``:
``jobs.exec.col.a_b.normal`` once ``jobs.exec.col.a.b.normal`` exists. A job of type
``col.a_b`` is refused at firing, to jobs.intake.dlq with a reason naming the type it
collides with, its status CANCELLED, and the partition goes on firing the jobs after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config import Settings
from pipeline.kafka.admin import colliding
from pipeline.serde import Event
from pipeline.timers.processor import TIMER_OPTIONS, refusal_reason, timer_runner
from pipeline.topics import Topics
from tests.pipeline.timers.test_types_on_demand import _dead_letter_reason
from tests.support.jobs import submitted
from tests.support.pipeline import in_thread, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for


def refused_after_a_first_type(settings: Settings, topics: Topics, tmp_path: Path,
                               first: Event, refused: Event, after: list[Event],
                               ) -> tuple[dict[str, Any], str]:  # fmt: skip
    """Timers in a thread fire ``first``, then are given ``refused`` and ``after``: the
    refused job's CANCELLED and its dead letter's reason, once the jobs after it fired
    (the partition goes on) and it did not."""
    events = TopicReader(settings, topics.events, settings.events_partitions)
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    with in_thread(timer_runner(settings, options)):
        produce(settings, topics.intake, [first])
        wait_for(lambda: events.of_job(first.data["job_id"], kind="FIRED"), timeout_s=60,
                 what="the first type fired")  # fmt: skip
        produce(settings, topics.intake, [refused, *after])
        cancelled = wait_for(lambda: events.of_job(refused.data["job_id"], kind="CANCELLED"),
                             timeout_s=60, what="the job refused")  # fmt: skip
        wait_for(lambda: all(events.of_job(job.data["job_id"], kind="FIRED") for job in after),
                 timeout_s=60, what="the jobs after it fired")  # fmt: skip
        assert not events.of_job(refused.data["job_id"], kind="FIRED")
    events.close()
    return cancelled[0], _dead_letter_reason(settings, topics.intake_dlq)


def test_a_colliding_type_is_dead_lettered_and_the_partition_goes_on(
        topics: Topics, tmp_path: Path) -> None:  # fmt: skip
    settings = topics.settings
    first = submitted(job_type="col.a.b")
    colliding = submitted(job_type="col.a_b")
    after = [submitted(job_type="data.process") for _ in range(5)]
    cancelled, reason = refused_after_a_first_type(settings, topics, tmp_path, first, colliding,
                                                   after)  # fmt: skip
    assert cancelled["detail"] == reason
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
