"""How far ahead a timer partition fires: the lead its backlog due soon requires.

With few jobs due the timers fire the configured lead ahead (``JOBSTREAM_FIRE_LEAD``, 1 s).
When more are due within the next seconds than the pipeline passes on in the time left
before them (a burst, the top of the hour), the partition fires further ahead, up to
``JOBSTREAM_FIRE_LEAD_MOST`` (10 s), so that its workers hold the burst claimed before its
instant rather than claim and start it in the seconds after.

The rule, per partition: the entries due in each of the next seconds are counted (a scan
of schedule keys only, bounded, once a second: :data:`COUNT_EVERY_MS`). Bucket ``k`` holds
those due between ``k`` and ``k + 1`` s from now, and ``due_by[k]`` those due before its
end. Passed on at ``rate_per_s``, they need ``due_by[k] / rate_per_s`` seconds; when that
is more than the ``k`` seconds before the bucket begins plus the configured lead (which
they get anyway), firing must reach into the bucket now: the lead covers it, ``(k + 1)``
s. A steady load below the rate never raises it. The horizon (now + lead) never recedes
between counts, so a burst the lead has reached is fired whole, not paced to its instant
as each firing shortens the backlog.

Pure: the counts and the clock are arguments.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

COUNT_EVERY_MS = 1000
"""How often a partition's backlog due soon is counted."""
RATE_PER_S = 250
"""Firings a timer partition counts on passing to its workers each second: about what the
whole pipeline keeps on the benchmark's two cores (1,500 jobs/s) over six partitions, so a
burst is fired as early as a saturated pipeline needs to hold it claimed by its instant."""


@dataclass(frozen=True)
class LeadRule:
    """How far ahead to fire, from the counts of entries due in each of the next seconds."""

    least_ms: int
    """The lead with few jobs due (``JOBSTREAM_FIRE_LEAD``)."""
    most_ms: int
    """The longest lead (``JOBSTREAM_FIRE_LEAD_MOST``); at or below ``least_ms``, the lead
    is ``least_ms`` always (no count)."""
    rate_per_s: int = RATE_PER_S
    """Firings the partition counts on passing on each second."""

    def __post_init__(self) -> None:
        if self.least_ms < 0 or self.most_ms < 0:
            raise ValueError(f"a lead cannot be negative: least {self.least_ms} ms, "
                             f"most {self.most_ms} ms")  # fmt: skip
        if self.rate_per_s <= 0:
            raise ValueError(f"rate_per_s must be above 0, got {self.rate_per_s}")

    @property
    def adapts(self) -> bool:
        """Whether the lead may change: not when it is 0 (firing on the instant is asked
        for, so that a pause reaches every run not yet due)."""
        return 0 < self.least_ms < self.most_ms

    @property
    def horizon_s(self) -> int:
        """The seconds ahead whose entries are counted."""
        return math.ceil(self.most_ms / 1000)

    @property
    def count_most(self) -> int:
        """Entries past which counting further changes nothing: they alone need the
        longest lead."""
        return self.rate_per_s * self.horizon_s

    def lead_ms(self, due_per_second: Sequence[int]) -> int:
        """The lead the counts require: ``due_per_second[k]`` entries due between ``k`` and
        ``k + 1`` s from now (overdue ones in bucket 0)."""
        most = max(self.most_ms, self.least_ms)
        counts = due_per_second[: self.horizon_s]
        if sum(counts) >= self.count_most:  # counted no further: as far as it goes
            return most
        lead, due_by = self.least_ms, 0
        for k, due in enumerate(counts):
            due_by += due
            if due and due_by * 1000 > (k * 1000 + self.least_ms) * self.rate_per_s:
                lead = max(lead, (k + 1) * 1000)
        return min(lead, most)


@dataclass
class PartitionLead:
    """One partition's horizon, recounted every :data:`COUNT_EVERY_MS`."""

    horizon_ms: int = 0
    """Entries due at or before it fire now; it never recedes."""
    counted_at_ms: int | None = None


@dataclass
class Leads:
    """The lead of each partition of one timer process."""

    rule: LeadRule
    partitions: dict[int, PartitionLead] = field(default_factory=dict)

    def count_due(self, partition: int, now_ms: int) -> bool:
        """Whether ``partition``'s backlog due soon is to be counted now."""
        if not self.rule.adapts:
            return False
        counted = self.partitions.get(partition, PartitionLead()).counted_at_ms
        return counted is None or now_ms - counted >= COUNT_EVERY_MS or now_ms < counted

    def counted(self, partition: int, now_ms: int, due_per_second: Sequence[int]) -> None:
        """Take a count: the horizon moves out to what it requires, never in."""
        lead = self.partitions.setdefault(partition, PartitionLead())
        lead.counted_at_ms = now_ms
        lead.horizon_ms = max(lead.horizon_ms, now_ms + self.rule.lead_ms(due_per_second))

    def horizon_ms(self, partition: int, now_ms: int) -> int:
        """Fire what is due at or before this instant."""
        lead = self.partitions.get(partition)
        least = now_ms + self.rule.least_ms
        return least if lead is None else max(least, lead.horizon_ms)

    def forget(self, partition: int) -> None:
        self.partitions.pop(partition, None)
