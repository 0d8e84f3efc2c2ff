"""When a run's handler really began, as the run's records tell it (``launched_at_ms``).

A run's STARTED commits with its claim, before the executor launches the handler: at the
claim's instant, or (claimed ahead of its due instant) at that instant, whenever the
handler in fact begins. What begins the handler (a thread of the executor, its event loop,
a child process) marks the run's :class:`LaunchStamp` by the worker's clock; the polling
thread reads it into the run's HEARTBEATs and the event that ends it
(pipeline/worker/supervisor.py), so jobs.events, the views and the API show the true start
lateness with no record more per job. A run that ends before its launch (cancelled while
held for its instant) keeps none.
"""

from __future__ import annotations


class LaunchStamp:
    """Set once, from whichever thread begins the handler; read by the polling thread (an
    attribute's write and read are atomic, and a run's end is read after its launch: the
    end is queued by the thread that launched it)."""

    __slots__ = ("at_ms",)

    def __init__(self) -> None:
        self.at_ms: int | None = None
        """Epoch ms, the worker's clock; None until the handler begins."""

    def mark(self, at_ms: int) -> None:
        if self.at_ms is None:
            self.at_ms = at_ms
