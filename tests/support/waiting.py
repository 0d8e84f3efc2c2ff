"""Wait on conditions, never on fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T],
    *,
    timeout_s: float = 30.0,
    interval_s: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)
