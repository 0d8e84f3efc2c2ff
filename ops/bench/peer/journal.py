"""Where the peer's tasks note when they started and finished, at the least cost.

Each worker process appends fixed-size binary records to files of its own in the
journal folder, one ``write()`` per record on an ``O_APPEND`` descriptor (atomic for
threads sharing it, visible to the reader at once, nothing to flush at shutdown):

- ``start-<pid>.bin``: ``(job_id, due_ms, started_ms)`` when the task body begins;
- ``end-<pid>.bin``: ``(job_id, due_ms, ended_ms)`` when it returns.

This costs the worker two system calls per task and the broker nothing, so it does not
weigh on the Redis side that is being measured (a RPUSH per task would). The runner
counts completions from the files' sizes while the run goes on, and reads the records
once the worker has stopped.
"""

from __future__ import annotations

import os
import struct
import threading
from pathlib import Path

RECORD = struct.Struct("<qqq")
"""job id, scheduled time (epoch ms), when it happened (epoch ms)."""
START, END = "start", "end"

Row = tuple[int, int, int]


class Journal:
    """A worker process's writer; opens its files on first use in each (forked) process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._pid = -1
        self._fds: dict[str, int] = {}

    def _fd(self, kind: str) -> int:
        pid = os.getpid()
        if pid != self._pid:  # a prefork child inherits the parent's object, not its files
            with self._lock:
                if pid != self._pid:
                    self._fds = {}
                    self._pid = pid
        fd = self._fds.get(kind)
        if fd is None:
            with self._lock:
                fd = self._fds.get(kind)
                if fd is None:
                    self.folder.mkdir(parents=True, exist_ok=True)
                    path = self.folder / f"{kind}-{pid}.bin"
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                    self._fds[kind] = fd
        return fd

    def write(self, kind: str, job_id: int, due_ms: int, at_ms: int) -> None:
        os.write(self._fd(kind), RECORD.pack(job_id, due_ms, at_ms))


def count(folder: Path, kind: str) -> int:
    """Records of ``kind`` written so far, from file sizes only."""
    return sum(path.stat().st_size // RECORD.size for path in folder.glob(f"{kind}-*.bin"))


def read(folder: Path, kind: str) -> list[Row]:
    """Every complete record of ``kind`` (a torn last record of a killed process is left out)."""
    rows: list[Row] = []
    for path in sorted(folder.glob(f"{kind}-*.bin")):
        data = path.read_bytes()
        whole = len(data) - len(data) % RECORD.size
        rows.extend(RECORD.iter_unpack(data[:whole]))
    return rows
