"""A token bucket, as pure arithmetic on a clock the caller passes.

Tokens come at ``rate`` per second up to ``capacity`` (the burst); each firing takes one.
A bucket starts full. Rescaling (a limit changed, or this process's share of the timer
partitions changed) keeps the tokens already earned, capped at the new capacity.
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

    def available(self, now_ms: int) -> bool:
        self.refill(now_ms)
        return self.tokens >= 1

    def take(self, now_ms: int) -> bool:
        """Take one token if there is one."""
        if not self.available(now_ms):
            return False
        self.tokens -= 1
        return True

    def wait_ms(self, now_ms: int) -> int:
        """How long until a token is there (0: now)."""
        self.refill(now_ms)
        missing = 1 - self.tokens
        return 0 if missing <= 0 else math.ceil(missing * 1000 / self.rate)

    def rescale(self, rate: float, capacity: float, now_ms: int) -> None:
        """New rate and capacity from ``now_ms`` on; the tokens earned so far are kept."""
        self.refill(now_ms)
        self.rate, self.capacity = rate, capacity
        self._validate()
        self.tokens = min(self.tokens, capacity)
