"""What a benchmark measures: a process's memory and CPU from /proc, percentiles, disk use.

Read from /proc directly (no psutil): ``VmRSS`` and ``VmHWM`` (peak RSS) from
``/proc/<pid>/status``, user + system CPU ticks from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _status_kb(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def rss_mb(pid: int) -> float:
    return _status_kb(pid, "VmRSS") / 1024


def peak_rss_mb(pid: int) -> float:
    """The process's high-water mark of resident memory since it started."""
    return _status_kb(pid, "VmHWM") / 1024


def stat_cpu_seconds(pid: int) -> tuple[float, float]:
    """(the process's own user + system CPU s, that of the children it has reaped)."""
    # Fields after the command name, which may itself hold spaces: utime, stime, cutime
    # and cstime are fields 14 to 17 of the line, so 11 to 14 after ") ".
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    own = int(fields[11]) + int(fields[12])
    reaped = int(fields[13]) + int(fields[14])
    return own / _TICKS_PER_S, reaped / _TICKS_PER_S


def cpu_seconds(pid: int) -> float:
    return stat_cpu_seconds(pid)[0]


def thread_cpu_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """Each live thread of ``pid``: its name and user + system CPU s."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(") ", 1)[1].split()
        except FileNotFoundError:  # ended since it was listed
            continue
        threads[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / _TICKS_PER_S)
    return threads


JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""HotSpot's compiler threads (a thread's name is cut to 15 characters in /proc)."""


def jit_seconds(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> float:
    """CPU s a JVM's compiler threads spent between two :func:`thread_cpu_seconds`.

    A lower bound: HotSpot ends compiler threads it no longer needs, and what one spent
    after ``before`` is gone with it."""
    return sum(cpu - before.get(tid, (name, 0.0))[1] for tid, (name, cpu) in after.items()
               if name.startswith(JIT_THREADS))  # fmt: skip


REFERENCE_ROUNDS = 10


def reference_cpu_ms() -> float:
    """The CPU ms this machine takes now for a fixed pure-Python loop, the best of
    :data:`REFERENCE_ROUNDS`: how fast it runs the interpreter at the time of a run.

    A host's neighbours move it: the same code's records cost 1.5 to 3 times as much CPU
    on one day as on another (docs/benchmarks.md, "How fast the machine runs from day
    to day"), so figures
    of CPU per job from different days compare only as multiples of this."""
    best = float("inf")
    for _ in range(REFERENCE_ROUNDS):
        start = time.process_time()
        _reference_loop()
        best = min(best, time.process_time() - start)
    return round(best * 1000, 2)


def _reference_loop() -> int:
    """Dictionary writes, tuples and string formatting: what the processors' Python does."""
    kept: dict[int, tuple[int, str]] = {}
    for i in range(100_000):
        kept[i % 997] = (i, f"job-{i}")
    return len(kept)


def disk_mb(path: Path) -> float:
    """Allocated size of every file under ``path`` (what ``du`` reports), in MB."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:  # RocksDB deletes obsolete files as we walk
                continue
    return total / 1024 / 1024


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of values already sorted ascending (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return float(sorted_values[int(rank) - 1])


def summarize(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": percentile(ordered, 50),
        "p90": percentile(ordered, 90),
        "p99": percentile(ordered, 99),
        "max": float(ordered[-1]) if ordered else float("nan"),
    }


@dataclass
class Sample:
    at: float
    """Wall-clock time (epoch s) of the reading, comparable with fired_at_ms."""
    rss_mb: float
    cpu_s: float


@dataclass
class ProcessSampler:
    """Reads a process's RSS and CPU time every ``interval_s`` on a daemon thread.

    ``rss`` and ``cpu`` read them for a pid; the defaults read the process alone, and
    ops/bench/peer/procs.py passes readers that add up a process and its children.
    """

    pid: int
    interval_s: float = 0.5
    samples: list[Sample] = field(default_factory=list)
    rss: Callable[[int], float] = rss_mb
    cpu: Callable[[int], float] = cpu_seconds

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(Sample(time.time(), self.rss(self.pid), self.cpu(self.pid)))
            except (FileNotFoundError, ProcessLookupError):
                return  # the process has exited
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def latest(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    def peak_rss_mb(self, start: float = 0.0, end: float = float("inf")) -> float:
        return max((s.rss_mb for s in self.samples if start <= s.at <= end), default=0.0)

    def cpu_percent(self, start: float, end: float) -> float:
        """Average CPU use between two instants, 100 = one core."""
        within = [s for s in self.samples if start <= s.at <= end]
        if len(within) < 2:
            return float("nan")
        first, last = within[0], within[-1]
        return 100 * (last.cpu_s - first.cpu_s) / max(last.at - first.at, 1e-9)


def top_frames(collapsed: Path, n: int = 8) -> dict[str, list[tuple[str, float]]]:
    """The frames with the most samples in a py-spy ``--format raw`` (collapsed) profile.

    ``self``: share of samples where the line was the innermost frame; ``total``: share
    where a jobstream function (line numbers dropped) was anywhere on the stack.
    """
    own: dict[str, int] = {}
    total: dict[str, int] = {}
    samples = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        samples += count
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in {f.rsplit(":", 1)[0] + ")" for f in frames if "pipeline/" in f}:
            total[frame] = total.get(frame, 0) + count

    def ranked(counts: dict[str, int]) -> list[tuple[str, float]]:
        best = sorted(counts.items(), key=lambda item: -item[1])[:n]
        return [(frame, round(100 * count / max(samples, 1), 1)) for frame, count in best]

    return {"self": ranked(own), "total": ranked(total)}
