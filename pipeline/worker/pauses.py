"""Which of a lane's partitions to pause: pure decisions on its tier buffers.

A tier whose buffer holds ``prefetch`` records or :data:`BUFFER_BYTES` is full: its
partitions are paused until half of its buffer has started (:func:`full_tiers`); so is a
partition holding more than its share of the buffer (:func:`share`). Every partition is
paused while the worker drains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jobstream._pipeline.worker.buffer import TierBuffer
from jobstream._pipeline.worker.offsets import Partition

BUFFER_BYTES = 32 * 1024 * 1024
"""A tier's buffer is also full at this many bytes of records: a job's params may reach
1 MB, and ``prefetch`` of those would not fit in memory."""


def full_tiers(full: frozenset[str], fill: dict[str, float]) -> frozenset[str]:
    """The tiers to keep paused, given how full each tier's buffer is (1.0 is full): a
    tier is paused when full and resumed once half of it has started.

    The gap matters: librdkafka drops what it had fetched ahead for a partition when it is
    paused and fetches it again after the resume, so a tier toggling at one threshold
    would fetch its records many times over.
    """
    return frozenset(tier for tier, level in fill.items()
                     if level >= 1.0 or (tier in full and level > 0.5))  # fmt: skip


def share(prefetch: int, partitions: int) -> int:
    """One partition's share of a tier buffer of ``prefetch`` records, rounded up so that
    the shares together fill it."""
    return max(1, -(-prefetch // max(1, partitions)))


def to_pause(buffers: Mapping[str, TierBuffer[Any]], *, prefetch: int, full: frozenset[str],
             tier_of: Mapping[str, str], counts: Mapping[str, int],
             assigned: Iterable[Partition], paused: frozenset[Partition],
             fetching: bool) -> tuple[frozenset[str], set[Partition]]:  # fmt: skip
    """(the tiers full now, the partitions to keep paused), given the tiers full before,
    the assigned partitions of each tier's topic (``counts``) and those paused now."""
    fill = {tier: max(len(buffer) / prefetch, buffer.bytes / BUFFER_BYTES)
            for tier, buffer in buffers.items()}  # fmt: skip
    full = full_tiers(full, fill)
    hoarding: set[Partition] = set()
    for topic, count in counts.items():
        if count > 1:
            hoarding |= buffers[tier_of[topic]].hoarding(share(prefetch, count), paused)
    wanted = {key for key in assigned if not fetching or key in hoarding
              or tier_of[key[0]] in full}  # fmt: skip
    return full, wanted
