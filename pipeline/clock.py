"""The wall clock every component reads: epoch milliseconds, as the events carry them."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
