"""Topic identities on the real broker: the same topic keeps its own, a topic made again
under the same name has another, and a topic the cluster does not know has none."""

from __future__ import annotations

import time

from jobstream._pipeline.kafka.identity import topic_identity
from jobstream._pipeline.topics import Topics
from tests.support.topics import recreate


def test_a_topic_made_again_has_another_identity_on_the_same_cluster(topics: Topics) -> None:
    config = topics.settings.kafka_config
    first = topic_identity(config, topics.timers_changelog)
    assert first is not None and first == topic_identity(config, topics.timers_changelog)
    assert first != topic_identity(config, topics.status)
    recreate(topics, [topics.timers_changelog])
    again = topic_identity(config, topics.timers_changelog)
    assert again is not None
    assert (again.cluster_id, again.topic_id != first.topic_id) == (first.cluster_id, True)


def test_a_topic_the_cluster_does_not_know_has_no_identity(topics: Topics) -> None:
    started = time.monotonic()
    assert topic_identity(topics.settings.kafka_config, f"{topics.intake}.none", 2.0) is None
    assert time.monotonic() - started < 5
