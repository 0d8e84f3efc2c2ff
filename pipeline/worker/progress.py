"""How far a run has got: ``ctx.progress(fraction, message)`` from its handler, to jobs.status.

A handler may report as often as it likes; what reaches jobs.events is bounded. Each run
has a :class:`ProgressReporter`. The handler's thread (with ``--isolation process``, the
thread that reads the child's messages) puts each report there, replacing the one still
waiting; the worker's loop takes the waiting report once the run's previous one left at
least ``interval_s`` before, and sends it on the run's HEARTBEAT. A report is proof of
life: it renews the run's lease and stands in for the next plain heartbeat. When the run
ends, the report still waiting, if any, is sent before its outcome whatever the interval,
so the last progress jobs.status shows is the handler's last word.

A checkpoint (``ctx.checkpoint``, pipeline/worker/checkpoints.py) is put here too and leaves
the same way, with the progress waiting beside it on one HEARTBEAT: what the handler
reported after it never leaves before it.

So a run sends at most one report per ``interval_s`` (4 a second by default), and a report
waits at most ``interval_s`` plus one turn of the loop (``poll_timeout_s``, 20 ms) before
it is produced. Pure apart from a lock: the caller passes the monotonic time, so the
policy is unit-tested without a clock.
"""

from __future__ import annotations

import math
import numbers
import threading
from dataclasses import dataclass
from typing import NamedTuple

from jobstream._pipeline.errors import InvalidArgumentError
from jobstream._pipeline.model.lifecycle import PROGRESS_MESSAGE_CHARS
from jobstream._pipeline.worker.checkpoints import CheckpointReport

DEFAULT_INTERVAL_S = 0.25
"""Least time between two reports of one run on jobs.events."""


@dataclass(frozen=True, slots=True)
class ProgressReport:
    """One report of a handler: the HEARTBEAT's ``progress`` record (records.Progress) is
    made of it in the worker (pipeline/worker/outcomes.py); a process-isolated run's child
    sends it as it is, without importing the records."""

    fraction: float
    """From 0 (nothing done) to 1 (all done)."""
    message: str | None
    """What the handler is doing, at most :data:`PROGRESS_MESSAGE_CHARS` characters."""
    at_ms: int
    """When the handler reported it (epoch ms, the worker's clock)."""


class Reports(NamedTuple):
    """What leaves on one HEARTBEAT: the latest progress and checkpoint, either may be None."""

    progress: ProgressReport | None
    checkpoint: CheckpointReport | None


def checked(fraction: object, message: object) -> tuple[float, str | None]:
    """``fraction`` as a float from 0 to 1 and ``message`` cut to its bound;
    InvalidArgumentError (a ValueError) naming the argument that is neither."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise InvalidArgumentError(
            "fraction", f"expected a number from 0 to 1, got {type(fraction).__name__}"
        )
    value = float(fraction)
    if not 0.0 <= value <= 1.0:  # NaN is neither
        raise InvalidArgumentError("fraction", f"expected a number from 0 to 1, got {value!r}")
    if message is None:
        return value, None
    if not isinstance(message, str):
        raise InvalidArgumentError(
            "message", f"expected a string or None, got {type(message).__name__}"
        )
    return value, bounded(message)


def bounded(message: str) -> str:
    """``message`` cut to :data:`PROGRESS_MESSAGE_CHARS`, an ellipsis marking the cut."""
    if len(message) <= PROGRESS_MESSAGE_CHARS:
        return message
    return message[: PROGRESS_MESSAGE_CHARS - 1] + "…"


class ProgressReporter:
    """One run's latest report, waiting for its turn to be sent.

    :meth:`put` is called from any thread; :meth:`due` and :meth:`last` from the worker's
    loop only.
    """

    __slots__ = ("_lock", "_next_at", "_saved", "_waiting", "interval_s")

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        if not interval_s >= 0:
            raise ValueError(f"progress interval must not be negative, got {interval_s}")
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._waiting: ProgressReport | None = None
        self._saved: CheckpointReport | None = None
        self._next_at = -math.inf
        """Monotonic instant from which the next report may leave."""

    def put(self, report: ProgressReport | CheckpointReport) -> None:
        """The handler's latest report (or checkpoint): it replaces any still waiting."""
        with self._lock:
            if isinstance(report, CheckpointReport):
                self._saved = report
            else:
                self._waiting = report

    def due(self, now: float) -> Reports | None:
        """The reports to send at monotonic ``now``: those waiting, once ``interval_s``
        has passed since the previous ones were taken; None otherwise. Read without the
        lock first: a report put meanwhile is seen on the loop's next turn."""
        if (self._waiting is None and self._saved is None) or now < self._next_at:
            return None
        return self._take(now)

    def last(self, now: float) -> Reports | None:
        """The reports still waiting, interval or not: the run has ended, and its last
        ones go before its outcome."""
        return None if self._waiting is None and self._saved is None else self._take(now)

    def _take(self, now: float) -> Reports | None:
        with self._lock:
            reports = Reports(self._waiting, self._saved)
            self._waiting = self._saved = None
        if reports == (None, None):
            return None
        self._next_at = now + self.interval_s
        return reports
