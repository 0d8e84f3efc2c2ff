"""``jobstream topics grow``: more partitions for the timers, on a running system.

The timers' topics grow together: jobs.intake and jobs.retry are co-partitioned (one store
per partition reads both) and their changelog must have a partition for every store. The
order (docs/adr/0011-partitions-that-grow.md):

1. the changelog grows first, so a store of a new partition can be restored at once;
2. every changelog partition gets a layout record: an old one, the count its store is laid
   out for (so a store restored later, by timers configured with the new count, still
   knows what to hand over); a new one, the count it grew from, so the timers that take
   it wait for the old partitions to hand its records over before reading its intake;
3. jobs.intake and jobs.retry grow, in one request, with every owner's intake topic
   (pipeline/tenancy.py), which the timers read beside jobs.intake partition by partition
   and whose records they only pass on, so nothing of theirs is handed over. The timers
   notice (their metadata refresh), the group rebalances, and every old partition hands
   over what moved.

A grow that stopped half-way (a timeout) is finished by running the command again. The
execution topics grow apart (pipeline/worker/grow.py, ``--exec-partitions``); jobs.events
does not grow: its partitions carry the status processor's stores.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError, ValidationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import create_partitions, partition_counts
from jobstream._pipeline.tenancy import owner_of_topic
from jobstream._pipeline.timers.layout import LAYOUT_KEY, added, fresh
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GrowPlan:
    """What a grow to ``target`` does, from the partition counts found."""

    target: int
    old: int
    """jobs.intake's count now: the count the stores are laid out for."""
    grow_changelog: bool
    mark_new: bool
    """Whether to write the changelog partitions' layout records (not when jobs.intake grew
    already: their timers may have gone on since)."""
    grow_inputs: tuple[str, ...]

    @property
    def nothing_to_do(self) -> bool:
        return not (self.grow_changelog or self.mark_new or self.grow_inputs)


def plan_grow(topics: Topics, counts: Mapping[str, int], target: int) -> GrowPlan:
    """The steps that bring the timers' topics from ``counts`` to ``target`` partitions;
    ValidationError for a target that is not a grow, TopicMismatchError for topics missing
    or in a state no grow leaves them in."""
    intake, retry, changelog = topics.intake, topics.retry, topics.timers_changelog
    missing = [name for name in (intake, retry, changelog) if not counts.get(name)]
    if missing:
        raise TopicMismatchError(f"no topic {', '.join(missing)}: `jobstream topics create` "
                                 "makes them")  # fmt: skip
    found = {name: counts[name] for name in (intake, retry, changelog)}
    if target < max(found.values()):
        raise ValidationError("--partitions", f"{target} is fewer than the timers' topics "
                              f"have ({found}): Kafka adds partitions, never removes "
                              "them")  # fmt: skip
    inputs = {found[intake], found[retry]}
    half_grown = inputs == {min(inputs), target}  # an earlier grow stopped between the two
    if found[changelog] < max(inputs) or (len(inputs) > 1 and not half_grown):
        raise TopicMismatchError(f"the timers' topics are in no state a grow leaves them "
                                 f"in: {found}")  # fmt: skip
    return GrowPlan(
        target=target, old=min(inputs), grow_changelog=found[changelog] < target,
        mark_new=max(inputs) < target,
        grow_inputs=tuple(name for name in (intake, retry) if found[name] < target),
    )  # fmt: skip


def grow_timer_topics(settings: Settings, target: int, *, timeout_s: float = 30.0) -> GrowPlan:
    """Grow jobs.intake, jobs.retry and the timers' changelog to ``target`` partitions."""
    topics = Topics(settings)
    admin = clients.admin_client(settings.kafka_config)
    names = (topics.intake, topics.retry, topics.timers_changelog)
    plan = plan_grow(topics, partition_counts(admin, names, timeout_s), target)
    if plan.grow_changelog:
        create_partitions(admin, [topics.timers_changelog], target, timeout_s)
    if plan.mark_new:
        _mark_new(settings, topics.timers_changelog, plan.old, target, timeout_s)
    doors = _owner_topics_below(admin, settings.topic_prefix, target, timeout_s)
    if plan.grow_inputs or doors:
        create_partitions(admin, [*plan.grow_inputs, *doors], target, timeout_s)
    log.info("timers' topics grown", extra={"from": plan.old, "to": target})
    return plan


def _owner_topics_below(admin: AdminClient, prefix: str, target: int,
                        timeout_s: float) -> list[str]:  # fmt: skip
    """Every owner's intake topic with fewer than ``target`` partitions."""
    found = admin.list_topics(timeout=timeout_s).topics
    return sorted(name for name, topic in found.items()
                  if owner_of_topic(prefix, name) is not None and len(topic.partitions) < target)


def _mark_new(settings: Settings, changelog: str, old: int, target: int,
              timeout_s: float) -> None:  # fmt: skip
    """The layout record of each changelog partition (pipeline/timers/layout.py)."""
    producer = clients.producer(settings, client_id="jobstream-topics-grow")
    for partition in range(target):
        layout = fresh(old) if partition < old else added(old, target)
        producer.produce(changelog, layout.encode(), LAYOUT_KEY, partition=partition)
    left = producer.flush(timeout_s)
    if left:
        raise TopicMismatchError(f"{changelog}: {left} layout records not acknowledged "
                                 f"after {timeout_s:.0f} s; run the command again")  # fmt: skip
