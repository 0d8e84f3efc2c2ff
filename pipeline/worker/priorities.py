"""Which priority tier a worker takes its next execution from.

Each job type has three execution topics (``high``, ``normal``, ``low``). A worker keeps a
small buffer per tier and, whenever it has a free slot, asks :class:`PriorityPolicy` which
buffer to take from. The policy is a fixed round of slots, by default 6 high, 3 normal and
1 low (``high:normal:low = 6:3:1``), walked in that order:

- with a backlog in every tier, a round runs 6 high, then 3 normal, then 1 low execution,
  so high goes first and takes 60 % of the slots;
- a slot whose tier has nothing waiting passes down to the next lower tier that has work
  (and, from ``low``, wraps round to the highest), so no slot is ever wasted;
- low is never starved: it owns one slot in every round of 10 picks, whatever the backlog
  above it.

Blocks rather than an interleaving (H N H H N H L ...): a high-priority burst then runs
ahead of everything queued below it, which is what a user asks of a priority, while the
low slot still bounds how long a low job waits behind a permanent high backlog.

Pure and deterministic: no clock, no Kafka, so the fairness guarantees are unit-tested.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from jobstream._pipeline.topics import PRIORITIES

DEFAULT_WEIGHTS: Mapping[str, int] = {"high": 6, "normal": 3, "low": 1}


class PriorityPolicy:
    """A round of weighted slots per tier; an empty tier's slot passes down."""

    __slots__ = ("_cursor", "_schedule", "tiers", "weights")

    def __init__(
        self, weights: Mapping[str, int] = DEFAULT_WEIGHTS, *, tiers: tuple[str, ...] = PRIORITIES
    ) -> None:
        if set(weights) != set(tiers):
            raise ValueError(f"weights must name exactly the tiers {tiers}, got {sorted(weights)}")
        if any(not isinstance(w, int) or w < 1 for w in weights.values()):
            raise ValueError("every tier needs a whole weight of at least 1, or it would starve")
        self.tiers = tiers
        self.weights = dict(weights)
        self._schedule = tuple(i for i, tier in enumerate(tiers) for _ in range(weights[tier]))
        self._cursor = 0

    def pick(self, ready: Collection[str]) -> str | None:
        """The tier to take the next execution from, among the tiers with work ``ready``.

        None when nothing is ready; the round does not advance then, so an idle worker
        does not skip anyone's turn.
        """
        if not ready:
            return None
        owner = self._schedule[self._cursor]
        self._cursor = (self._cursor + 1) % len(self._schedule)
        count = len(self.tiers)
        for step in range(count):
            tier = self.tiers[(owner + step) % count]
            if tier in ready:
                return tier
        return None
