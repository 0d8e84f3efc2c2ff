"""Memory and CPU of a process together with its children (Celery's prefork pool).

Celery's prefork worker is a main process (consumer, eta timer) and one child per pool
slot that runs the tasks; its cost is their sum. CPU adds the children that have exited
and been reaped too (the parent's ``cutime``/``cstime``), so a pool process replaced in
the middle of a run still counts. Memory sums each process's RSS: pages a forked child
still shares with its parent count twice, so this is an upper bound of the family's
footprint, and the same measure ops/bench/measure.py takes of jobstream's processes.

Also what the peer's child processes (redis-server, the Celery worker) share: their pid,
log, and the wait for them to be ready.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from jobstream._ops.bench.measure import ProcessSampler, rss_mb, stat_cpu_seconds
from jobstream._ops.bench.peer.errors import PeerError


class ChildProcess:
    """A child process of the peer (redis-server, the Celery worker), its output in
    ``log_path``; subclasses start and stop it."""

    what = "the child process"
    """Its name in errors."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise PeerError(f"{self.what} is not started")
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        raise NotImplementedError

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self, ready: Callable[[], bool], *, timeout_s: float, poll_s: float) -> None:
        """Return once ``ready()``; exiting first, or not ready within ``timeout_s`` (then
        stopped), raises PeerError with the end of the log."""
        deadline = time.monotonic() + timeout_s
        while not ready():
            code = None if self.process is None else self.process.poll()
            if code is not None:
                raise PeerError(f"{self.what} exited ({code}) at start:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise PeerError(f"{self.what} was not ready after {timeout_s:.0f}s:\n"
                                f"{self.log_tail()}")  # fmt: skip
            time.sleep(poll_s)


def children(pid: int) -> list[int]:
    """Direct children of ``pid``, from every one of its threads' ``children`` file."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except FileNotFoundError:  # the thread ended as we listed them
            continue
    return found


def family(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    members, index = [pid], 0
    while index < len(members):
        with contextlib.suppress(FileNotFoundError):  # exited since it was listed
            members.extend(children(members[index]))
        index += 1
    return members


def family_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``, its live descendants, and the children it has reaped."""
    total = sum(stat_cpu_seconds(pid))
    for member in family(pid)[1:]:
        try:
            total += stat_cpu_seconds(member)[0]
        except FileNotFoundError:
            continue  # exited: counted in its parent's reaped time once reaped
    return total


def family_rss_mb(pid: int) -> float:
    total = rss_mb(pid)
    for member in family(pid)[1:]:
        try:
            total += rss_mb(member)
        except FileNotFoundError:
            continue
    return total


def family_sampler(pid: int) -> ProcessSampler:
    """A ProcessSampler of a process and its children, summed."""
    return ProcessSampler(pid, rss=family_rss_mb, cpu=family_cpu_seconds)
