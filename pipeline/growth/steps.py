"""The steps of ``jobstream topics grow`` for a processor whose stores are per partition
(the timers: jobs.intake and jobs.retry; the status processor: jobs.events and
jobs.status.handover). The order (docs/adr/0011-partitions-that-grow.md):

1. the changelog grows first, so a store of a new partition can be restored at once;
2. every changelog partition gets a layout record (pipeline/growth/layout.py): an old one,
   the count its store is laid out for (so a store restored later still knows what to
   hand over); a new one, the count it grew from, so whoever takes it waits for the old
   partitions to hand its records over before reading its input;
3. the inputs grow, in one request. The processor notices (its metadata refresh), the
   group rebalances, and every old partition hands over what moved.

A grow that stopped half-way (a timeout) is finished by running the command again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError, ValidationError
from jobstream._pipeline.growth.layout import LAYOUT_KEY, added, fresh
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import create_partitions

LayoutRecord = tuple[bytes, Sequence[tuple[str, bytes]]]
"""The key and headers a store's changelog carries its layout under: :data:`LAYOUT_KEY` and
none for the timers; an internal record's for the status processor, whose changelog is
jobs.status (pipeline/status/record.py)."""


@dataclass(frozen=True)
class GrowPlan:
    """What a grow to ``target`` does, from the partition counts found."""

    target: int
    old: int
    """The inputs' count now: the count the stores are laid out for."""
    grow_changelog: bool
    mark_new: bool
    """Whether to write the changelog partitions' layout records (not when the inputs grew
    already: their processors may have gone on since)."""
    grow_inputs: tuple[str, ...]

    @property
    def nothing_to_do(self) -> bool:
        return not (self.grow_changelog or self.mark_new or self.grow_inputs)


def plan_grow(inputs: Sequence[str], changelog: str, counts: Mapping[str, int], target: int,
              *, option: str, what: str) -> GrowPlan:  # fmt: skip
    """The steps that bring co-partitioned ``inputs`` and their ``changelog`` from
    ``counts`` to ``target`` partitions; ValidationError (naming ``option``) for a target
    that is not a grow, TopicMismatchError for topics missing or in a state no grow leaves
    them in. ``what`` names the topics in messages."""
    missing = [name for name in (*inputs, changelog) if not counts.get(name)]
    if missing:
        raise TopicMismatchError(f"no topic {', '.join(missing)}: `jobstream topics create` "
                                 "makes them")  # fmt: skip
    found = {name: counts[name] for name in (*inputs, changelog)}
    if target < max(found.values()):
        raise ValidationError(option, f"{target} is fewer than {what} have ({found}): Kafka "
                              "adds partitions, never removes them")  # fmt: skip
    input_counts = {found[name] for name in inputs}
    half_grown = input_counts == {min(input_counts), target}  # a grow stopped between two
    if found[changelog] < max(input_counts) or (len(input_counts) > 1 and not half_grown):
        raise TopicMismatchError(f"{what} are in no state a grow leaves them in: {found}")
    return GrowPlan(
        target=target, old=min(input_counts), grow_changelog=found[changelog] < target,
        mark_new=max(input_counts) < target,
        grow_inputs=tuple(name for name in inputs if found[name] < target),
    )  # fmt: skip


def grow_stores(settings: Settings, admin: AdminClient, plan: GrowPlan, changelog: str,
                also: Sequence[str] = (), *, timeout_s: float,
                layout_record: LayoutRecord = (LAYOUT_KEY, ())) -> None:  # fmt: skip
    """Carry ``plan`` out: the changelog, its layout records (keyed and marked as
    ``layout_record`` says), then the inputs (with ``also``, topics that grow with them and
    hold nothing of the stores)."""
    if plan.grow_changelog:
        create_partitions(admin, [changelog], plan.target, timeout_s)
    if plan.mark_new:
        write_layouts(settings, changelog, plan.old, plan.target, timeout_s, layout_record)
    if plan.grow_inputs or also:
        create_partitions(admin, [*plan.grow_inputs, *also], plan.target, timeout_s)


def write_layouts(settings: Settings, changelog: str, old: int, target: int, timeout_s: float,
                  layout_record: LayoutRecord = (LAYOUT_KEY, ())) -> None:  # fmt: skip
    """The layout record of each changelog partition (pipeline/growth/layout.py), under
    the key and with the headers of ``layout_record``."""
    key, headers = layout_record
    producer = clients.producer(settings, client_id="jobstream-topics-grow")
    for partition in range(target):
        layout = fresh(old) if partition < old else added(old, target)
        producer.produce(changelog, layout.encode(), key, partition=partition,
                         headers=list(headers))  # fmt: skip
    left = producer.flush(timeout_s)
    if left:
        raise TopicMismatchError(f"{changelog}: {left} layout records not acknowledged "
                                 f"after {timeout_s:.0f} s; run the command again")  # fmt: skip
