"""Topics deleted and made again under the same names: new topic ids, offsets from zero,
as a broker whose data was wiped shows them."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics
from tests.support.waiting import wait_for


def recreate(topics: Topics, names: list[str]) -> None:
    """Delete ``names`` and create them again with the design's settings."""
    config = topics.settings.kafka_config
    admin = AdminClient(dict(config))
    for future in admin.delete_topics(names, operation_timeout=30, request_timeout=30).values():
        future.result()
    wait_for(lambda: not set(names) & set(admin.list_topics(timeout=10).topics),
             timeout_s=30, what=f"{names} deleted")  # fmt: skip
    specs = [spec for name in names if (spec := topics.spec_of(name)) is not None]
    assert len(specs) == len(names), f"not topics of the design: {names}"

    def created() -> bool:
        try:
            return not ensure_topics(config, specs).existing
        except KafkaException as exc:  # a deletion the controller has not finished yet
            if "marked for deletion" not in str(exc):
                raise
            return False

    wait_for(created, timeout_s=30, interval_s=0.2, what=f"{names} created again")
