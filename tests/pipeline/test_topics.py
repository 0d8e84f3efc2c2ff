"""The topics' specs: what `jobstream topics create` asks of the broker."""

from __future__ import annotations

from jobstream._pipeline.config import MAX_MESSAGE_BYTES, Settings
from jobstream._pipeline.topics import Topics


def spec_config(settings: Settings, name: str, partitions: int) -> dict[str, str]:
    """The config ``jobstream topics create`` gives topic ``name``, which it makes with
    ``partitions``."""
    topics = Topics(settings)
    spec = topics.spec_of(name)
    assert spec is not None and spec in topics.specs()
    assert spec.partitions == partitions
    return spec.config()


def test_the_results_topic_is_compacted_expires_and_takes_a_megabyte() -> None:
    settings = Settings(topic_prefix="p.", results_partitions=4, results_retention="3d")
    config = spec_config(settings, "p.jobs.results", 4)
    assert config["cleanup.policy"] == "compact,delete"
    assert config["retention.ms"] == str(3 * 86_400_000)
    assert config["min.compaction.lag.ms"] == str(86_400_000)
    assert int(config["max.message.bytes"]) == MAX_MESSAGE_BYTES
    assert settings.max_result_bytes + 64 * 1024 <= MAX_MESSAGE_BYTES, "headers fit beside it"


def test_other_compacted_topics_keep_their_records_for_ever() -> None:
    topics = Topics(Settings())
    status = topics.spec_of(topics.status)
    assert status is not None and status.cleanup_policy == "compact"
    assert "retention.ms" not in status.config()


def test_the_checkpoints_topic_is_compacted_and_forgets_a_job_after_a_week() -> None:
    settings = Settings(topic_prefix="p.", events_partitions=5)
    config = spec_config(settings, "p.jobs.checkpoints", 5)
    assert config["cleanup.policy"] == "compact,delete"
    assert config["retention.ms"] == str(7 * 86_400_000)


def test_the_logs_topic_deletes_by_age_and_is_not_compacted() -> None:
    settings = Settings(topic_prefix="p.", logs_partitions=3, logs_retention="2d")
    config = spec_config(settings, "p.jobs.logs", 3)
    assert config["cleanup.policy"] == "delete"
    assert config["retention.ms"] == str(2 * 86_400_000)
    assert settings.max_log_bytes + 64 * 1024 <= int(config["max.message.bytes"])
