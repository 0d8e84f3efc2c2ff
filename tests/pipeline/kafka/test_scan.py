"""A topic read to its end: from the settings' cluster, or through a consumer of another
(known by its address alone), and within a time bound when one is given."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.topics import TopicSpec


def _bare_consumer(settings: Settings) -> Consumer:
    return Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": "scan-test",
                     "enable.partition.eof": True})  # fmt: skip


def test_a_topic_is_read_to_its_end_from_its_settings_or_a_bare_consumer(
        settings: Settings) -> None:  # fmt: skip
    topic = f"{settings.topic_prefix}scan"
    ensure_topics(settings.kafka_config, [TopicSpec(topic, 3)])
    producer = clients.producer(settings)
    for i in range(30):
        producer.produce(topic, str(i).encode(), str(i).encode())
    assert producer.flush(30) == 0

    for source in (settings, _bare_consumer(settings)):
        with TopicScan(source, topic) as scan:
            read = sorted(int(m.value() or b"") for batch in scan for m in batch)
            assert read == list(range(30)) and scan.complete

    with TopicScan(settings, topic, timeout_s=0) as scan:
        assert [batch for batch in scan] == [] and not scan.complete

    with pytest.raises(ConfigurationError, match="no topic"):
        TopicScan(_bare_consumer(settings), f"{settings.topic_prefix}absent")
