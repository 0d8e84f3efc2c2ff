"""Submits a run's jobs through JobClient from a thread, as its Load says when."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jobstream._ops.bench.load import Load
from jobstream._pipeline.config import Settings
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest

OWNER = "bench"


class Submitter(threading.Thread):
    """Submit the load's one-off jobs of ``job_type``, job i due at ``t0_ms + offsets_ms[i]``.

    Job ids are kept for counting losses. ``run()`` called directly submits on the
    caller's thread.
    """

    def __init__(self, settings: Settings, job_type: str, load: Load, t0_ms: int,
                 on_progress: Callable[[int], object] = lambda n: None) -> None:  # fmt: skip
        super().__init__(name="submitter", daemon=True)
        self.settings, self.job_type, self.load, self.t0_ms = settings, job_type, load, t0_ms
        self.on_progress = on_progress
        self.ids: list[str] = []
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        started = time.perf_counter()
        try:
            with JobClient(self.settings) as client:
                for first, upto in self.load.chunks(self.t0_ms, self.halt):
                    count = len(self.load.offsets_ms)
                    owners = self.load.owners or (OWNER,) * count
                    types = self.load.job_types or (self.job_type,) * count
                    self.ids.extend(client.submit_many(
                        JobRequest(job_type=job_type, owner=owner,
                                   **self.load.when(self.t0_ms + offset))  # type: ignore[arg-type]
                        for offset, owner, job_type in zip(self.load.offsets_ms[first:upto],
                                                           owners[first:upto], types[first:upto],
                                                           strict=True)
                    ))  # fmt: skip
                    self.on_progress(upto - first)
        except BaseException as exc:  # reported by the run, which stops on it
            self.error = exc
        self.seconds = time.perf_counter() - started

    def extra(self, events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Numbers of the run beyond the common tally (none for one-off jobs)."""
        return {}
