"""Submits a run's jobs from a thread: paced ahead of their due times, or all at once."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.jobs.client import JobClient
from pipeline.jobs.model import JobRequest

OWNER = "bench"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CHUNK = 10_000
_PACE_S = 0.05


class Submitter(threading.Thread):
    """Submit one-off jobs of ``job_type``, job i due at ``t0_ms + offsets_ms[i]``.

    With ``lead_ms`` each job is submitted ``lead_ms`` before it falls due (in chunks,
    every 50 ms), as a steady stream of users would; without, as fast as the client can.
    ``offsets_ms`` must be sorted. Job ids are kept for counting losses. ``run()`` directly
    submits on the caller's thread.
    """

    def __init__(self, settings: Settings, job_type: str, t0_ms: int,
                 offsets_ms: Sequence[int], lead_ms: int | None,
                 on_progress: Callable[[int], object] = lambda n: None) -> None:  # fmt: skip
        super().__init__(name="submitter", daemon=True)
        self.settings, self.job_type = settings, job_type
        self.t0_ms, self.offsets_ms, self.lead_ms = t0_ms, offsets_ms, lead_ms
        self.on_progress = on_progress
        self.ids: list[str] = []
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        started = time.perf_counter()
        try:
            with JobClient(self.settings) as client:
                self._submit(client)
        except BaseException as exc:  # reported by the run, which stops on it
            self.error = exc
        self.seconds = time.perf_counter() - started

    def _submit(self, client: JobClient) -> None:
        done, total = 0, len(self.offsets_ms)
        while done < total and not self.halt.is_set():
            upto = min(total, done + _CHUNK)
            if self.lead_ms is not None:
                horizon = now_ms() - self.t0_ms + self.lead_ms
                upto = min(upto, bisect.bisect_right(self.offsets_ms, horizon, lo=done))
                if upto == done:
                    time.sleep(_PACE_S)
                    continue
            self.ids.extend(client.submit_many(
                JobRequest(job_type=self.job_type, owner=OWNER,
                           run_at=_EPOCH + timedelta(milliseconds=self.t0_ms + offset))
                for offset in self.offsets_ms[done:upto]
            ))  # fmt: skip
            self.on_progress(upto - done)
            done = upto
