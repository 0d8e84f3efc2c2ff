"""A token bucket, as pure arithmetic on a clock the caller passes.

Tokens come at ``rate`` per second up to ``capacity`` (the burst); each firing takes one,
a batch of submissions one per job. A bucket starts full. A take of more tokens than the
capacity passes once the bucket is full and leaves it in debt, so a batch larger than the
burst is not refused for ever, and over time the rate still holds. Rescaling (a limit
changed, or this process's share of the timer partitions changed) keeps the tokens
already earned, capped at the new capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class TokenBucket:
    rate: float
    """Tokens per second (> 0)."""
    capacity: float
    """The most tokens held at once: how many firings may go out together (>= 1)."""
    tokens: float
    updated_ms: int
    """The instant ``tokens`` was last brought up to date."""

    @classmethod
    def full(cls, rate: float, capacity: float, now_ms: int) -> TokenBucket:
        bucket = cls(rate, capacity, capacity, now_ms)
        bucket._validate()
        return bucket

    def _validate(self) -> None:
        if not self.rate > 0:
            raise ValueError(f"rate must be positive, got {self.rate}")
        if not self.capacity >= 1:
            raise ValueError(f"capacity must be at least 1, got {self.capacity}")

    def refill(self, now_ms: int) -> None:
        """Add the tokens earned since the last update (a clock going back earns none)."""
        if now_ms > self.updated_ms:
            earned = (now_ms - self.updated_ms) * self.rate / 1000
            self.tokens = min(self.capacity, self.tokens + earned)
            self.updated_ms = now_ms

    def available(self, now_ms: int, count: int = 1) -> bool:
        self.refill(now_ms)
        return self.tokens >= min(count, self.capacity)

    def take(self, now_ms: int, count: int = 1) -> bool:
        """Take ``count`` tokens if they are there (all of a full bucket's, and a debt,
        for a count over the capacity)."""
        if not self.available(now_ms, count):
            return False
        self.tokens -= count
        return True

    def wait_ms(self, now_ms: int, count: int = 1) -> int:
        """How long until ``count`` tokens can be taken (0: now)."""
        self.refill(now_ms)
        missing = min(count, self.capacity) - self.tokens
        return 0 if missing <= 0 else math.ceil(missing * 1000 / self.rate)

    def rescale(self, rate: float, capacity: float, now_ms: int) -> None:
        """New rate and capacity from ``now_ms`` on; the tokens earned so far are kept."""
        self.refill(now_ms)
        self.rate, self.capacity = rate, capacity
        self._validate()
        self.tokens = min(self.tokens, capacity)
