"""The handler-side record: one JSON line per finished handler run, a file per process.

What the workers report can be wrong in exactly the ways a fault test looks for, so
duplicate runs are counted from what the handler itself wrote down. Each line is written
with one ``write(2)`` on a file opened ``O_APPEND``: it reaches the kernel before the
handler returns, so a SIGKILL right after it loses nothing, and lines from a process's
threads never interleave. A run cut off before its end (the process killed while the
handler slept) leaves no line.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

import orjson

from jobstream._pipeline.errors import ConfigurationError

RUNS_DIR_ENV = "JOBSTREAM_FAULTS_RUNS_DIR"
"""Folder of the record; the run sets it for the workers it starts."""


class Run(NamedTuple):
    job_id: str
    execution_id: str
    attempt: int
    worker_id: str
    start_ms: int
    end_ms: int
    pid: int
    ok: bool
    """False for a run that raised on purpose (a job asked to fail its first attempt)."""
    machine_start_ms: int | None = None
    """When the handler began by the machine's clock, which a skewed process's clock
    (ops/faults/skewed_clock/) does not move: the harness's own reference."""
    machine_end_ms: int | None = None
    """When the handler did its last piece of work, by the machine's clock."""


def machine_now_ms() -> int:
    """The machine's clock, past any skew the fault harness gave the process's Python clock
    (it moves ``time.time`` and ``time.time_ns`` only)."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME) // 1_000_000


class Journal:
    """Appends runs to ``<folder>/runs-<worker id>-<pid>.jsonl``; safe across threads."""

    def __init__(self, folder: Path | None = None) -> None:
        self._folder = folder
        self._fd: int | None = None
        self._lock = threading.Lock()

    def append(self, run: Run) -> None:
        os.write(self._file(run.worker_id), orjson.dumps(run._asdict()) + b"\n")

    def begin_long(self, worker_id: str) -> None:
        """Note that a long run begins now (``working-<worker id>.txt``, the machine's clock
        in ms a line): a scenario that stops a worker mid-run picks one holding a long run."""
        folder = self._folder or _folder_from_env()
        with open(folder / f"working-{worker_id}.txt", "a") as out:
            out.write(f"{machine_now_ms()}\n")

    def _file(self, worker_id: str) -> int:
        with self._lock:
            if self._fd is None:
                folder = self._folder or _folder_from_env()
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"runs-{worker_id}-{os.getpid()}.jsonl"
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            return self._fd


def _folder_from_env() -> Path:
    value = os.environ.get(RUNS_DIR_ENV)
    if not value:
        raise ConfigurationError(f"{RUNS_DIR_ENV} is not set: the fault app has nowhere "
                                 "to record its runs")  # fmt: skip
    return Path(value)


def read_runs(folder: Path) -> list[Run]:
    """Every run recorded under ``folder``, by every process."""
    runs = []
    for path in sorted(folder.glob("runs-*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip():
                runs.append(Run(**orjson.loads(line)))
    return runs
