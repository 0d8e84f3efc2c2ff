"""Weighted fair sharing of one batch among queues: stride scheduling, as a pure function.

Each queue (an owner's due timers) has a weight and a *pass*, the virtual time at which it
is next served. The queue with the lowest pass gives one item and its pass moves on by
``1 / weight``, so over any stretch a queue of weight 2 gives twice the items of a queue of
weight 1, and the items come interleaved rather than one queue after the other. A queue
that runs dry leaves the batch, and its share goes to those still holding items (the
batch is always as full as the queues allow). Ties go to the queue listed first.

Queues are iterators pulled only as far as the batch needs, so a queue of a million items
costs what the batch takes of it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

DEFAULT_WEIGHT = 1.0


def weight_of(weights: Mapping[str, float]) -> Callable[[str], float]:
    """The weight of each owner: its configured one, else the ``"*"`` entry, else 1."""
    default = weights.get("*", DEFAULT_WEIGHT)
    return lambda owner: weights.get(owner, default)


def fair_batch(
    queues: Mapping[K, Iterable[T]], weight: Callable[[K], float], limit: int
) -> list[T]:
    """At most ``limit`` items taken from ``queues`` in weighted fair order."""
    if limit <= 0:
        return []
    heap: list[tuple[float, int, K, Iterator[T], float]] = []
    for order, (key, queue) in enumerate(queues.items()):
        w = weight(key)
        if w <= 0:
            raise ValueError(f"weight of {key!r} must be positive, got {w}")
        heap.append((0.0, order, key, iter(queue), 1.0 / w))
    if len(heap) == 1:  # one queue: its own order, with no heap to keep
        return list(itertools.islice(heap[0][3], limit))
    heapq.heapify(heap)
    batch: list[T] = []
    while heap and len(batch) < limit:
        passed, order, key, items, stride = heapq.heappop(heap)
        item = next(items, _DRY)
        if item is _DRY:
            continue
        batch.append(item)  # type: ignore[arg-type]
        heapq.heappush(heap, (passed + stride, order, key, items, stride))
    return batch


def group_by(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """``items`` in lists by ``key``, each list in the items' order, keys in first-seen order."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


_DRY = object()
