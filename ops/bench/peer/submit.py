"""Submits a run's tasks from a thread with ``send_task(..., eta=...)``: paced or at once.

Job i is task ``(i, due_ms)`` with ``eta`` its due time. One producer is kept for the
whole run, and each chunk goes out in one ``Producer.batch()`` (a Redis pipeline): the
fastest submission Celery's public API offers, as jobstream's client submits a chunk
with one ``submit_many``. Celery still builds and serialises every message in Python,
which is what bounds ``submit_per_s`` on the Celery side.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from typing import Any

from jobstream._ops.bench.load import Load
from jobstream._ops.bench.peer.app import make_app
from jobstream._ops.bench.peer.settings import PeerSettings
from jobstream._pipeline.clock import instant_of, now_ms

log = logging.getLogger(__name__)

_CHUNK = 1_000


class Submitter(threading.Thread):
    """Submit task ``task`` for each of the load's jobs, job i due at ``t0_ms + offsets_ms[i]``,
    when the load says (ops/bench/load.py)."""

    def __init__(self, settings: PeerSettings, task: str, load: Load, t0_ms: int) -> None:
        super().__init__(name="peer-submitter", daemon=True)
        self.settings, self.task, self.load, self.t0_ms = settings, task, load, t0_ms
        self.submitted = 0
        self.after_due = 0
        """Jobs whose chunk reached Redis only after they were due: submission fell behind."""
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        started = time.perf_counter()
        app = make_app(self.settings)
        try:
            with app.producer_or_acquire() as producer:
                self._submit(app, producer)
        except BaseException as exc:  # reported by the run, which stops on it
            log.exception("submitting failed after %d tasks", self.submitted)
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - started
            app.close()

    def _submit(self, app: Any, producer: Any) -> None:
        offsets = self.load.offsets_ms
        for first, upto in self.load.chunks(self.t0_ms, self.halt, size=_CHUNK):
            self._send(app, producer, first, upto)
            late = bisect.bisect_left(offsets, now_ms() - self.t0_ms, lo=first, hi=upto)
            self.after_due += late - first
            self.submitted = upto

    def _send(self, app: Any, producer: Any, first: int, upto: int) -> None:
        send_task = app.send_task
        with producer.batch(max_size=_CHUNK):
            for i in range(first, upto):
                due_ms = self.t0_ms + self.load.offsets_ms[i]
                eta = instant_of(due_ms)
                send_task(self.task, args=(i, due_ms), eta=eta, producer=producer)
