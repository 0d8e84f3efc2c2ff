"""The Celery worker as a separate process: ``python -m celery -A jobstream._ops.bench.peer.tasks
worker``.

Options every run uses, and why:

- ``--without-heartbeat --without-gossip --without-mingle``: a single worker has no
  peers to talk to; these only add broker traffic and start-up delay (Celery's own
  advice for one worker).
- ``--loglevel WARNING``: no log line per task (see ops/bench/peer/app.py).

The pool is a choice (:class:`WorkerShape`); its defaults per handler suit a 2-core
machine: ``noop`` on two worker nodes of one thread each (below); ``sleep10`` on a pool
of 64 threads, as many as jobstream's worker runs handlers at once, because a 10 ms sleep on two
prefork children would cap the run at 200 jobs/s, whatever the scheduler can do.

The ``noop`` default is two worker nodes of one thread each, the best of what was tried
on a quiet 2-core machine (1,200 eta tasks/s for 20 s, 5 s ahead, 2026-11-24): one node
of prefork x2, Celery's default, drained 853 tasks/s with p99 start lateness 7.9 s; one
node of threads x2, 821/s and 9.1 s; two nodes of threads x1 kept up, 1,200/s with p99
376 ms, at 1,244 µs of worker and Redis CPU per task against 1,488. Each node is a main
process that takes, holds and hands out the eta tasks, the part that bounds Celery here,
so two of them use both cores; the task itself is nothing.

Measured earlier (5,000 noop eta tasks due at once, shared and loaded):
the worker's main process is the bottleneck on every pool (each message costs it Redis
round trips to take, track and acknowledge it), so prefork's children sit mostly idle;
``threads`` with 2 threads used about a fifth less CPU per task than prefork and was no
slower; ``solo`` sometimes fell to 20 tasks/s for minutes once the eta tasks came due,
so it is no default for eta-heavy scenarios.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jobstream
from jobstream._ops.bench.peer.errors import PeerError
from jobstream._ops.bench.peer.procs import ChildProcess
from jobstream._ops.bench.peer.settings import QUEUE, PeerSettings

log = logging.getLogger(__name__)

POOLS = ("prefork", "threads", "solo")


@dataclass(frozen=True, kw_only=True)
class WorkerShape:
    """How the Celery worker runs its tasks."""

    pool: str = "prefork"
    """Celery's ``--pool``: one of :data:`POOLS` (eventlet/gevent would need installing)."""
    concurrency: int = 2
    """Pool size: processes for prefork, threads for threads (solo runs one at a time)."""
    prefetch_multiplier: int = 4
    """Celery's default. Eta tasks do not count against it: the worker raises its
    prefetch limit for each one it holds, so it takes every eta task in as it arrives."""
    nodes: int = 1
    """Worker processes (Celery "nodes") on the queue, each with its own consumer and
    pool: the main process that takes, holds and hands out the tasks is the bottleneck."""

    def __post_init__(self) -> None:
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, not {self.pool!r}")
        if min(self.concurrency, self.prefetch_multiplier, self.nodes) < 1:
            raise ValueError("concurrency, prefetch_multiplier and nodes must be at least 1")

    @classmethod
    def for_handler(cls, handler: str) -> WorkerShape:
        """The default shape for a handler (see the module docstring)."""
        if handler == "sleep10":
            return cls(pool="threads", concurrency=64)
        return cls(pool="threads", concurrency=1, nodes=2)


class CeleryWorker(ChildProcess):
    """The worker child process, in a session of its own so it can be stopped whole."""

    what = "the Celery worker"

    def __init__(self, settings: PeerSettings, shape: WorkerShape, log_path: Path) -> None:
        super().__init__(log_path)
        self.settings = settings
        self.shape = shape

    def command(self) -> list[str]:
        """One ``celery worker``, or a shell that runs ``nodes`` of them and waits."""
        nodes = [self._node_command(i) for i in range(self.shape.nodes)]
        if len(nodes) == 1:
            return nodes[0]
        return ["sh", "-c", " & ".join(shlex.join(node) for node in nodes) + " & wait"]

    def _node_command(self, index: int) -> list[str]:
        shape = self.shape
        return [sys.executable, "-m", "celery", "-A", "jobstream._ops.bench.peer.tasks", "worker",
                "--pool", shape.pool, "--concurrency", str(shape.concurrency),
                "--prefetch-multiplier", str(shape.prefetch_multiplier),
                "--queues", QUEUE, "--hostname", f"peer-{os.getpid()}-{index}@%h",
                "--loglevel", "WARNING",
                "--without-heartbeat", "--without-gossip", "--without-mingle"]  # fmt: skip

    def start(self, timeout_s: float = 60.0) -> CeleryWorker:
        """Start the worker; return once every node consumes from the queue."""
        folder = self.settings.journal_dir
        for stale in folder.glob("ready-*"):
            stale.unlink()
        root = str(Path(jobstream.__file__).parent.parent)  # where `jobstream` imports from
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, **self.settings.env(), "PYTHONPATH": path}
        log.info("starting the Celery worker: %s", " ".join(self.command()))
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                self.command(),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_ready(lambda: len(list(folder.glob("ready-*"))) >= self.shape.nodes,
                        timeout_s=timeout_s, poll_s=0.1)  # fmt: skip
        return self

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise PeerError(f"the Celery worker exited ({self.process.returncode}):\n"
                            f"{self.log_tail()}")  # fmt: skip

    def stop(self, timeout_s: float = 30.0) -> None:
        """Warm shutdown (SIGTERM: running tasks finish, held ones go back to Redis);
        the whole process group is killed if it has not exited within ``timeout_s``."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)  # every node, not only a shell over them
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("the Celery worker did not stop in %.0f s; killing its group", timeout_s)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
