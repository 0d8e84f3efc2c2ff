from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics


def test_creates_every_topic_of_the_design_once(settings: Settings) -> None:
    specs = Topics(settings).specs()
    first = ensure_topics(settings.kafka_config, specs)
    second = ensure_topics(settings.kafka_config, specs)

    assert sorted(first.created) == sorted(spec.name for spec in specs)
    assert second.created == []
    assert sorted(second.existing) == sorted(spec.name for spec in specs)


def test_created_topics_have_the_designed_partitions_and_policies(topics: Topics) -> None:
    admin = AdminClient(topics.settings.kafka_config)
    metadata = admin.list_topics(timeout=10).topics
    assert len(metadata[topics.intake].partitions) == topics.settings.timer_partitions
    assert len(metadata[topics.timers_changelog].partitions) == topics.settings.timer_partitions
    assert len(metadata[topics.retry].partitions) == topics.settings.timer_partitions
    assert topics.execution("image.render", "high") in metadata

    resources = {
        name: ConfigResource(ConfigResource.Type.TOPIC, name)
        for name in (topics.status, topics.timers_changelog, topics.workers, topics.events,
                     topics.results, topics.clocks)
    }
    configs = admin.describe_configs(list(resources.values()))
    policy = {
        name: configs[res].result()["cleanup.policy"].value for name, res in resources.items()
    }
    assert policy == {
        topics.status: "compact",
        topics.timers_changelog: "compact",
        topics.workers: "compact",
        topics.events: "delete",
        topics.results: "compact,delete",
        topics.clocks: "delete",
    }
    stamped = configs[resources[topics.clocks]].result()["message.timestamp.type"].value
    assert stamped == "LogAppendTime", "clock probes are stamped by the broker"
    max_bytes = configs[resources[topics.status]].result()["max.message.bytes"].value
    assert int(max_bytes) > 1024 * 1024


def test_partition_count_mismatch_is_reported(settings: Settings, topics: Topics) -> None:
    wider = settings.model_copy(update={"timer_partitions": settings.timer_partitions + 2})
    with pytest.raises(TopicMismatchError) as caught:
        ensure_topics(wider.kafka_config, Topics(wider).specs())
    message = str(caught.value)
    assert f"{topics.intake}: 3 partitions, expected 5" in message
    assert topics.timers_changelog in message


def test_cleanup_policy_mismatch_is_reported(settings: Settings) -> None:
    names = Topics(settings)
    admin = AdminClient(settings.kafka_config)
    from confluent_kafka.admin import NewTopic

    admin.create_topics(
        [NewTopic(names.status, settings.events_partitions, 1, config={"cleanup.policy": "delete"})]
    )[names.status].result()
    with pytest.raises(
        TopicMismatchError, match=rf"{names.status}: cleanup.policy=delete, expected compact"
    ):
        ensure_topics(settings.kafka_config, names.specs())


def test_min_insync_replicas_is_set_on_each_topic_created(settings: Settings) -> None:
    specs = Topics(settings).specs()[:2]
    ensure_topics(settings.kafka_config, specs, min_insync_replicas=1)
    admin = AdminClient(settings.kafka_config)
    resources = [ConfigResource(ConfigResource.Type.TOPIC, spec.name) for spec in specs]
    for resource, future in admin.describe_configs(resources).items():
        entry = future.result(timeout=30)["min.insync.replicas"]
        # The topic's own setting, not the broker's (which the local broker also sets).
        assert (entry.value, entry.source) == ("1", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), \
            resource
