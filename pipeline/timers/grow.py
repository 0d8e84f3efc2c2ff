"""``jobstream topics grow --partitions``: more partitions for the timers, on a running system.

The timers' topics grow together: jobs.intake and jobs.retry are co-partitioned (one store
per partition reads both) and their changelog must have a partition for every store, in
the order of pipeline/growth/steps.py. Every owner's intake topic (pipeline/tenancy.py)
grows with jobs.intake: the timers read it beside jobs.intake partition by partition and
only pass its records on, so nothing of theirs is handed over.

The execution topics grow apart (pipeline/worker/grow.py, ``--exec-partitions``), and so
does jobs.events (pipeline/status/grow.py, ``--events-partitions``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.steps import GrowPlan, grow_stores
from jobstream._pipeline.growth.steps import plan_grow as plan_stores_grow
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import partition_counts
from jobstream._pipeline.tenancy import owner_of_topic
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


def plan_grow(topics: Topics, counts: Mapping[str, int], target: int) -> GrowPlan:
    """The steps that bring the timers' topics from ``counts`` to ``target`` partitions."""
    return plan_stores_grow((topics.intake, topics.retry), topics.timers_changelog, counts,
                            target, option="--partitions", what="the timers' topics")


def grow_timer_topics(settings: Settings, target: int, *, timeout_s: float = 30.0) -> GrowPlan:
    """Grow jobs.intake, jobs.retry and the timers' changelog to ``target`` partitions."""
    topics = Topics(settings)
    admin = clients.admin_client(settings.kafka_config)
    names = (topics.intake, topics.retry, topics.timers_changelog)
    plan = plan_grow(topics, partition_counts(admin, names, timeout_s), target)
    doors = _owner_topics_below(admin, settings.topic_prefix, target, timeout_s)
    grow_stores(settings, admin, plan, topics.timers_changelog, doors, timeout_s=timeout_s)
    log.info("timers' topics grown", extra={"from": plan.old, "to": target})
    return plan


def _owner_topics_below(admin: AdminClient, prefix: str, target: int,
                        timeout_s: float) -> list[str]:  # fmt: skip
    """Every owner's intake topic with fewer than ``target`` partitions."""
    found = admin.list_topics(timeout=timeout_s).topics
    return sorted(name for name, topic in found.items()
                  if owner_of_topic(prefix, name) is not None and len(topic.partitions) < target)
