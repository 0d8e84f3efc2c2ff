"""Jobs the timers refuse at firing (a type whose execution topic the broker refused, or
that is past the cluster's bound on them), on the real broker: the refusal as a dead
letter on jobs.intake.dlq tells it, and so does the job's CANCELLED."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import in_thread, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for


def drain(consumer: Consumer) -> Iterator[Message]:
    """The records ``consumer`` reads until a read of two seconds finds none."""
    while batch := consumer.consume(5000, timeout=2):
        yield from (m for m in batch if m.error() is None)


def dead_letter_reason(settings: Settings, topic: str) -> str:
    """The reason (its ``jobstream.error`` header) of the first dead letter on ``topic``."""
    consumer = clients.consumer(settings, "reader")
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        message = next(drain(consumer))
        return dict(message.headers())["jobstream.error"].decode()
    finally:
        consumer.close()


def refused_after_a_first_type(settings: Settings, topics: Topics, tmp_path: Path, *,
                               first: str, refused: str, after: str,
                               ) -> tuple[Event, str]:  # fmt: skip
    """Timers in a thread fire a job of type ``first``, then are given one of type
    ``refused`` and three of type ``after``: the refused job's submission and its dead
    letter's reason, once the jobs after it fired (the partition goes on), it did not, and
    its CANCELLED gave the same reason."""
    first_job, refused_job = submitted(job_type=first), submitted(job_type=refused)
    after_jobs = [submitted(job_type=after) for _ in range(3)]
    events = TopicReader(settings, topics.events, settings.events_partitions)
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    with in_thread(timer_runner(settings, options)):
        produce(settings, topics.intake, [first_job])
        wait_for(lambda: events.of_job(first_job.data["job_id"], kind="FIRED"), timeout_s=60,
                 what="the first type fired")  # fmt: skip
        produce(settings, topics.intake, [refused_job, *after_jobs])
        cancelled = wait_for(lambda: events.of_job(refused_job.data["job_id"], kind="CANCELLED"),
                             timeout_s=60, what="the job refused")  # fmt: skip
        wait_for(lambda: all(events.of_job(job.data["job_id"], kind="FIRED")
                             for job in after_jobs),
                 timeout_s=60, what="the jobs after it fired")  # fmt: skip
        assert not events.of_job(refused_job.data["job_id"], kind="FIRED")
    events.close()
    reason = dead_letter_reason(settings, topics.intake_dlq)
    assert cancelled[0]["detail"] == reason
    return refused_job, reason
