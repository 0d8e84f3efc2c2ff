from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import Topics


@pytest.fixture
def restorer(topics: Topics) -> Iterator[Consumer]:
    consumer = clients.consumer(topics.settings, f"{topics.settings.topic_prefix}restore")
    yield consumer
    consumer.close()
