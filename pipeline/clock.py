"""The wall clock every component reads: epoch milliseconds, as the events carry them."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def seconds_until(at_ms: int) -> float:
    """How long until the instant ``at_ms`` on this clock; 0 once it has come."""
    return max(0.0, (at_ms - now_ms()) / 1000)
