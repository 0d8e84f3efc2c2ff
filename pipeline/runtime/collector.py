"""The garbage collector of a long-running process, set for many short-lived records.

A processor allocates a few dicts and objects per record and drops them within one
transaction; almost none form cycles. CPython's default (a young collection every 700
net allocations, every tenth of those a middle one) then spends its time traversing
objects that plain reference counting frees anyway: firing a burst of 20,000 timers on
the test driver took 1.12-1.28 s of CPU with the defaults and 0.86-0.94 s with a young
collection every 10,000 (docs/benchmarks.md, "Python per record"). Everything imported
before the command runs is frozen first, so no collection walks it again.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Net allocations between two young collections (CPython's default: 700)."""


def tune_collector() -> None:
    """Freeze what is loaded so far and collect the young generation less often."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
