"""``jobstream topics grow --events-partitions``: more partitions for jobs.events, on a
running system (docs/adr/0013-events-partitions-that-grow.md).

jobs.events' partitions are the status processor's stores: jobs.events and
jobs.status.handover are co-partitioned (one store per partition reads both) and
jobs.status, the stores' changelog (docs/adr/0014-jobs-status-is-the-status-changelog.md),
must have a partition for every store. They grow in the order of
pipeline/growth/steps.py, jobs.status first; the status processors then hand each job
whose key moved to its new partition (pipeline/status/handover.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.layout import LAYOUT_KEY
from jobstream._pipeline.growth.steps import GrowPlan, grow_stores, plan_grow
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import partition_counts
from jobstream._pipeline.status.record import INTERNAL, internal_key
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


def plan_events_grow(topics: Topics, counts: Mapping[str, int], target: int) -> GrowPlan:
    """The steps that bring jobs.events and its co-partitioned topics to ``target``."""
    return plan_grow((topics.events, topics.status_handover), topics.status, counts,
                     target, option="--events-partitions",
                     what="jobs.events and the status processor's topics")  # fmt: skip


def grow_events_topics(settings: Settings, target: int, *, timeout_s: float = 30.0) -> GrowPlan:
    """Grow jobs.status, then jobs.events and jobs.status.handover, to ``target``."""
    topics = Topics(settings)
    admin = clients.admin_client(settings.kafka_config)
    names = (topics.events, topics.status_handover, topics.status)
    plan = plan_events_grow(topics, partition_counts(admin, names, timeout_s), target)
    grow_stores(settings, admin, plan, topics.status, timeout_s=timeout_s,
                layout_record=(internal_key(LAYOUT_KEY), INTERNAL))  # fmt: skip
    log.info("jobs.events grown", extra={"from": plan.old, "to": target})
    return plan
