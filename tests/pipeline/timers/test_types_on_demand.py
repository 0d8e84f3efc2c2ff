"""Types on demand, on the real broker: 150 job types no setting lists get their execution
topics on first firing, with the configured partitions and settings; a type whose name is
not allowed is refused, naming it, on the intake dead-letter topic."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import DESERIALIZE, in_thread, produce
from tests.support.reader import TopicReader
from tests.support.refusals import dead_letter_reason, drain
from tests.support.waiting import wait_for

TYPES = [f"tenant{i // 10}.job_{i:03d}" for i in range(150)]


def test_150_new_types_get_their_topics_on_first_use(topics: Topics, tmp_path: Path) -> None:
    settings = topics.settings
    assert not set(TYPES) & set(settings.job_types)
    admin = AdminClient(dict(settings.kafka_config))
    names = [topics.execution(job_type, "normal") for job_type in TYPES]
    assert not set(names) & set(admin.list_topics(timeout=10).topics)
    bad = submitted(job_type="Reports/Q3", owner="tests")
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    with in_thread(timer_runner(settings, options)):
        produce(settings, topics.intake, [bad, *(submitted(job_type=t) for t in TYPES)])
        fired = wait_for(lambda: _executions(settings, names), timeout_s=120, interval_s=1,
                         what="an execution of every type")  # fmt: skip
        dead = TopicReader(settings, topics.intake_dlq, settings.dlq_partitions)
        wait_for(lambda: dead.poll() or dead.events, timeout_s=30, what="the refused job")
        dead.close()

    assert sorted(fired) == sorted(TYPES)
    present = admin.list_topics(timeout=10).topics
    assert all(len(present[name].partitions) == settings.exec_partitions for name in names)
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, names[0])])
    config = next(iter(configs.values())).result()
    spec = topics.spec_of(names[0])
    assert spec is not None
    assert config["retention.ms"].value == str(spec.retention_ms)
    assert config["max.message.bytes"].value == spec.config()["max.message.bytes"]
    reason = dead_letter_reason(settings, topics.intake_dlq)
    assert "spec.job_type" in reason and "Reports/Q3" in reason


def _executions(settings: Settings, names: list[str]) -> list[str] | None:
    """The job type of every execution on ``names``, once each topic has one; else None."""
    admin_topics = AdminClient(dict(settings.kafka_config)).list_topics(timeout=10).topics
    if not all(name in admin_topics for name in names):
        return None
    consumer = clients.consumer(settings, "reader")
    try:
        consumer.assign([TopicPartition(name, p, 0) for name in names
                         for p in range(len(admin_topics[name].partitions))])  # fmt: skip
        found: list[str] = []
        for message in drain(consumer):
            found.append(DESERIALIZE(message.value()).data["spec"]["job_type"])
        return found if len(found) >= len(names) else None
    finally:
        consumer.close()
