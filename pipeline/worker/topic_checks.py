"""What a worker checks of its topics before it joins its groups."""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka.admin import TopicMetadata

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker.lane import Lane


def create_missing_topics(settings: Settings, lanes: Sequence[Lane], pool: str | None) -> None:
    """A type served before any job of it fired gets its topics now, so the consumer
    sees them at once instead of after the next metadata refresh. Existing topics are
    left alone: their partition count is no business of a worker."""
    topics = Topics(settings)
    present = lanes[0].consumer.list_topics(timeout=30).topics
    for needed, what in ((topics.results, "results"), (topics.logs, "run logs"),
                         (topics.checkpoints, "checkpoints")):
        if needed not in present:  # made by `topics create`, not by workers
            raise ConfigurationError(f"topic {needed} not found: {what} go there; run "
                                     "`jobstream topics create`")
    missing = [spec for lane in lanes for spec in topics.job_type_specs(lane.job_type, pool)
               if spec.name not in present]  # fmt: skip
    if missing:
        ensure_topics(settings.kafka_config, missing,
                      replication_factor=settings.replication_factor,
                      min_insync_replicas=settings.min_insync_replicas)  # fmt: skip
    check_limited_partitions(settings, lanes, present)


def check_limited_partitions(settings: Settings, lanes: Sequence[Lane],
                             present: dict[str, TopicMetadata]) -> None:  # fmt: skip
    """A limited type's slots are split over ``JOBSTREAM_EXEC_PARTITIONS`` indices, by
    the timers as by the workers: its topics must have that many partitions."""
    wanted = settings.exec_partitions
    for lane in lanes:
        if not lane.slots.limited:
            continue
        for topic in lane.tier_of:
            found = len(present[topic].partitions) if topic in present else wanted
            if found != wanted:
                raise ConfigurationError(
                    f"{topic} has {found} partitions, but {lane.job_type} has a "
                    f"concurrency limit split over JOBSTREAM_EXEC_PARTITIONS={wanted}: "
                    "give the setting the topic's count (timers and workers alike)"
                )
