"""One scenario on Celery + Redis, measured as ``jobstream bench`` measures jobstream.

A run has a folder of its own under ``workdir`` (Redis's and the worker's logs, the
journal). It starts redis-server and the Celery worker, submits the scenario's tasks
from a thread (paced, or all at once), follows the journal until every job has ended
(or none has for ``stall_s`` after the last due time and the last submission), stops
the worker and Redis, and tallies the journal (ops/bench/peer/tally.py). RSS and CPU of
the worker (its pool processes included), of redis-server and of this process (the
submitting side) are read from /proc over the run, from just before the first
submission to the last completion.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import Progress

from jobstream._ops.bench import measure
from jobstream._ops.bench.load import Load
from jobstream._ops.bench.peer import journal
from jobstream._ops.bench.peer.errors import PeerError
from jobstream._ops.bench.peer.procs import family_cpu_seconds, family_sampler
from jobstream._ops.bench.peer.redis_server import RedisServer
from jobstream._ops.bench.peer.settings import TASKS, PeerSettings
from jobstream._ops.bench.peer.tally import tally
from jobstream._ops.bench.peer.worker import CeleryWorker, WorkerShape
from jobstream._pipeline.clock import now_ms

if TYPE_CHECKING:
    from jobstream._ops.bench.peer.submit import Submitter

log = logging.getLogger(__name__)

WORKER, REDIS, CLIENT = "celery worker", "redis-server", "bench (submitter)"
"""The names of the measured processes in ``rss_mb`` and ``cpu_s``."""


def run_peer(*, load: Load, handler: str, workdir: Path, port: int, progress: Progress | None,
             shape: WorkerShape | None = None,
             stall_s: float = 30.0) -> dict[str, Any]:  # fmt: skip
    """Run one scenario on Celery + Redis and return its numbers.

    ``load`` is the scenario's (ops/bench/load.py, the same as jobstream is offered);
    ``handler`` is ``noop`` or ``sleep10``; Redis listens on
    ``port``; ``shape`` is the worker's pool (default: :meth:`WorkerShape.for_handler`).
    Celery must be installed (:func:`jobstream._ops.bench.peer.install.ensure_installed`).

    The result has jobstream's keys (ops/bench/tally.py for the definitions; jobs/s is
    completed jobs over first due time to last completion) and:

    - ``fire_lateness_ms``: None, Celery has no firing apart from starting the task;
    - ``submit_per_s``: jobs submitted over the submitting thread's time (pacing
      included, so a paced run that keeps up shows the offered rate);
      ``submitted_after_due``: jobs that reached Redis only after their due time (then
      their lateness is the client's, not the scheduler's);
    - ``rss_mb``/``cpu_s``: peak RSS and CPU seconds over the run, per process; the
      worker's include its pool processes;
    - ``cpu_us_per_job``: CPU of worker and Redis per completed job (as jobstream's
      counts its processes and broker); ``cpu_us_per_job_with_client``: with the
      submitting process too.

    Raises :class:`PeerError` if a process fails to start or dies, or submitting fails.
    Jobs that never complete are counted as lost; the worker and Redis are always stopped.
    """
    if handler not in TASKS:
        raise ValueError(f"handler must be one of {tuple(TASKS)}, not {handler!r}")
    # Imported here: it needs Celery, which ensure_installed() may install only after
    # this module was imported (by the CLI, on a machine without it).
    from jobstream._ops.bench.peer.submit import Submitter

    shape = shape or WorkerShape.for_handler(handler)
    folder = workdir / f"celery-{load.scenario}-{time.strftime('%H%M%S')}-{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    horizon_s = load.lead_s + load.offsets_ms[-1] / 1000 + stall_s
    settings = PeerSettings(redis_url=f"redis://127.0.0.1:{port}/0",
                            journal_dir=folder / "journal",
                            visibility_timeout_s=3600 + horizon_s)  # fmt: skip
    view = _View(progress, len(load.offsets_ms))
    log.info("celery peer: %s %s, %d jobs, %s pool x%d, in %s", load.scenario, handler,
             len(load.offsets_ms), shape.pool, shape.concurrency, folder)  # fmt: skip
    with RedisServer(port, folder) as redis:
        worker = CeleryWorker(settings, shape, folder / "worker.log")
        samplers: dict[str, Any] = {}
        try:
            worker.start()
            view.started()
            pids = {WORKER: worker.pid, REDIS: redis.pid, CLIENT: os.getpid()}
            samplers = {WORKER: family_sampler(worker.pid), REDIS: measure.ProcessSampler(
                redis.pid), CLIENT: measure.ProcessSampler(os.getpid())}  # fmt: skip
            cpu_before = _cpu(pids)
            t0 = now_ms() + int(load.lead_s * 1000)
            submitter = Submitter(settings, TASKS[handler], load, t0)
            submitter.start()
            try:
                _follow(worker, redis, submitter, settings.journal_dir,
                        (t0 + load.offsets_ms[-1]) / 1000, stall_s, view)  # fmt: skip
                cpu = {name: v - cpu_before[name] for name, v in _cpu(pids).items()}
            finally:
                submitter.halt.set()
                submitter.join()
        finally:
            worker.stop()
            for sampler in samplers.values():
                sampler.stop()
    result = tally(submitter.submitted, t0 + load.offsets_ms[0],
                   journal.read(settings.journal_dir, journal.START),
                   journal.read(settings.journal_dir, journal.END))  # fmt: skip
    completed = max(result["completed"], 1)
    return {
        "system": "celery", "scenario": load.scenario, "handler": handler,
        "pool": shape.pool, "concurrency": shape.concurrency, "nodes": shape.nodes,
        "submit_per_s": submitter.submitted / max(submitter.seconds, 1e-3),
        "submitted_after_due": submitter.after_due,
        **result,
        "rss_mb": {name: round(s.peak_rss_mb(), 1) for name, s in samplers.items()},
        "cpu_s": {name: round(v, 2) for name, v in cpu.items()},
        "cpu_us_per_job": 1e6 * (cpu[WORKER] + cpu[REDIS]) / completed,
        "cpu_us_per_job_with_client": 1e6 * sum(cpu.values()) / completed,
        "versions": versions(),
        "work_dir": str(folder),
    }  # fmt: skip


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: family_cpu_seconds(pid) if name == WORKER else measure.cpu_seconds(pid)
            for name, pid in pids.items()}  # fmt: skip


def _follow(worker: CeleryWorker, redis: RedisServer, submitter: Submitter, folder: Path,
            last_due_s: float, stall_s: float, view: _View) -> None:  # fmt: skip
    """Follow the journal until every submitted job has ended, or none has for
    ``stall_s`` after the last due time and the last submission; fail at once if the
    worker, Redis or the submitter dies."""
    total = len(submitter.load.offsets_ms)
    last_change, seen = time.time(), 0
    while True:
        ended = journal.count(folder, journal.END)
        now = time.time()
        if ended != seen:
            last_change, seen = now, ended
        if submitter.error is not None:
            raise PeerError(f"submitting to Celery failed: {submitter.error!r}")
        worker.check_alive()
        if not redis.alive():
            raise PeerError(f"redis-server exited; see {redis.log_path}")
        view.update(submitter.submitted, ended, last_due_s - now)
        # The count includes duplicates' ends: confirm with distinct job ids.
        if ended >= total and len({row[0] for row in journal.read(folder, journal.END)}) >= total:
            return
        if not submitter.is_alive() and now - max(last_change, last_due_s) > stall_s:
            log.warning("no task ended for %.0f s after the last was due: %d of %d ended",
                        stall_s, ended, total)  # fmt: skip
            return
        time.sleep(0.2)


def versions() -> dict[str, str]:
    """Celery's and redis-server's versions, for the report."""
    found = {name: importlib.metadata.version(name) for name in ("celery", "kombu", "redis")}
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                         check=False).stdout  # fmt: skip
    found["redis-server"] = next((w[2:] for w in out.split() if w.startswith("v=")), out.strip())
    return found


class _View:
    """The run's lines on a rich Progress, or nothing when there is none."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.ids: tuple[Any, ...] = ()
        if progress is not None:
            self.ids = (progress.add_task("celery starting", total=None, info=""),)

    def started(self) -> None:
        if self.progress is None:
            return
        self.progress.update(self.ids[0], total=1, completed=1)
        add = self.progress.add_task
        self.ids = (add("celery submitted", total=self.total, info=""),
                    add("celery completed", total=self.total, info=""))  # fmt: skip

    def update(self, submitted: int, completed: int, due_in_s: float) -> None:
        if self.progress is None or len(self.ids) < 2:
            return
        info = (
            f"last job due in {due_in_s:.0f} s" if due_in_s > 0 else f"{-due_in_s:.0f} s past due"
        )
        self.progress.update(self.ids[0], completed=submitted)
        self.progress.update(self.ids[1], completed=completed, info=info)
