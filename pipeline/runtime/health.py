"""What a long-running loop shows of itself: its heartbeat (/healthz) and a stats line.

Every process (the processors on the runner, the workers) beats once per loop iteration;
``/healthz`` (pipeline/metrics.py) turns unhealthy when the beats stop. The stats line is
one structured log line every ``interval_s``. The gauges the loop owns (consumer lag, store
size: :meth:`LoopHealth.refresh`) are set every ``GAUGE_INTERVAL_S`` from the same beat.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from jobstream._pipeline import metrics

log = logging.getLogger(__name__)

GAUGE_INTERVAL_S = 5.0


class LoopHealth:
    def __init__(self, component: str, interval_s: float,
                 stats: Callable[[], Mapping[str, object]]) -> None:  # fmt: skip
        self.component = component
        self.interval_s = interval_s
        self.stats = stats
        self._heartbeat = metrics.LOOP_HEARTBEAT.labels(component)
        self._next_stats = time.monotonic() + interval_s
        self._gauges: list[Callable[[], None]] = []
        self._next_gauges = 0.0

    def refresh(self, gauge: Callable[[], None]) -> None:
        """Call ``gauge`` every ``GAUGE_INTERVAL_S`` from the loop, to set what it measures."""
        self._gauges.append(gauge)

    def beat(self) -> None:
        """The loop has turned; set the gauges and log the stats line when they are due."""
        self._heartbeat.set(time.time())
        now = time.monotonic()
        if now >= self._next_gauges:
            self._next_gauges = now + GAUGE_INTERVAL_S
            for gauge in self._gauges:
                gauge()
        if now >= self._next_stats:
            self._next_stats = now + self.interval_s
            self.log_stats()

    def log_stats(self) -> None:
        log.info("%s stats", self.component, extra={"component": self.component, **self.stats()})
