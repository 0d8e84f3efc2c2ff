"""The API process's metrics: read off its views each time /metrics is scraped.

``jobstream api --metrics-port`` serves them (pipeline/metrics.py); the names are defined
there with every other process's and listed in docs/metrics.md.
"""

from __future__ import annotations

import threading

from jobstream._connectors.views.pools import waiting_counts
from jobstream._connectors.views.store import ViewStore
from jobstream._pipeline import metrics

COMPONENT = "api"


class ViewGauges:
    """Sets the gauges the views answer, dropping the series of a pool and type that no
    longer waits (a gauge left at its last value would say it still does)."""

    def __init__(self, store: ViewStore, *, stale_after_ms: int) -> None:
        self.store = store
        self.stale_after_ms = stale_after_ms
        self._shown: set[tuple[str, str]] = set()
        self._lock = threading.Lock()  # scrapes are served on threads of their own

    def refresh(self) -> None:
        waiting = waiting_counts(self.store, stale_after_ms=self.stale_after_ms)
        with self._lock:
            for labels in self._shown - waiting.keys():
                metrics.JOBS_WAITING_FOR_POOL.remove(*labels)
            for (pool, job_type), count in waiting.items():
                metrics.JOBS_WAITING_FOR_POOL.labels(pool=pool, job_type=job_type).set(count)
            self._shown = set(waiting)

    def install(self) -> None:
        """Refresh before every scrape of this process's /metrics."""
        metrics.add_refresh(COMPONENT, self.refresh)

    def uninstall(self) -> None:
        """Stop refreshing (the views are closing) and drop the series set so far."""
        metrics.remove_refresh(COMPONENT)
        with self._lock:
            for labels in self._shown:
                metrics.JOBS_WAITING_FOR_POOL.remove(*labels)
            self._shown = set()
