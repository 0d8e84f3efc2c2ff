"""The timer benchmark's scenarios: each runs against a fresh topic prefix and returns
its numbers (for the JSON file) and the rows of its results table.

Fire lateness is ``fired_at_ms - scheduled_at_ms`` of each ExecutionRequested record (the
timer's own clock); seen lateness is when a read_committed consumer received it, minus
the scheduled time, so it includes the transaction commit.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.progress import Progress, TaskID

from jobstream._ops.bench import measure
from jobstream._ops.bench.harness import (
    JOB_TYPE,
    CommittedWatch,
    Executions,
    TimerProcess,
    create_topics,
    now_ms,
    workdir_for,
)
from jobstream._ops.bench.load import Load
from jobstream._ops.bench.profile import Recording, py_spy
from jobstream._ops.bench.report import Row
from jobstream._ops.bench.restore import fill_changelog, restore_in_process
from jobstream._ops.bench.submitter import Submitter
from jobstream._pipeline.config import Settings

TARGET_RSS_MB = 500
TARGET_FIRINGS_PER_S = 20_000
TARGET_P99_MS = 100
TARGET_RESTORE_S = 60
BACKLOG_COUNT = 1_000_000


class Run:
    """One scenario's settings, folder, timer process and progress display."""

    def __init__(self, settings: Settings, root: Path, progress: Progress, py_spy_s: float):
        self.settings = settings
        self.dir = workdir_for(root, settings)
        self.progress = progress
        self.py_spy_s = py_spy_s
        self.timer: TimerProcess | None = None
        self.sampler: measure.ProcessSampler | None = None
        self.profiler: Recording | None = None
        create_topics(settings)

    def start_timer(self) -> TimerProcess:
        self.timer = TimerProcess(self.settings, self.dir / "state", self.dir / "timers.log")
        self.sampler = measure.ProcessSampler(self.timer.pid)
        return self.timer

    def rss_info(self) -> str:
        sample = self.sampler.latest() if self.sampler else None
        return f"timer RSS {sample.rss_mb:.0f} MB" if sample else ""

    def profile(self) -> None:
        """Start py-spy on the timer for ``py_spy_s`` seconds (once), if asked for."""
        executable = py_spy()
        if self.py_spy_s <= 0 or self.profiler or not self.timer or not executable:
            return
        self.profiler = Recording(executable, self.timer.pid, self.py_spy_s,
                                  self.dir / "timers.pyspy.txt", idle=True)  # fmt: skip

    def wait_loaded(self, watch: CommittedWatch, reader: Executions, total: int,
                    timeout_s: float) -> dict[str, float]:  # fmt: skip
        """Wait until the timer group has committed every intake record; timings in epoch s."""
        task = self.progress.add_task("timer intake", total=total, info="")
        first = None
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            done = watch.committed()
            if done and first is None:
                first = time.time()
            self.progress.update(task, completed=done, info=self.rss_info())
            if done >= total:
                return {"first_commit": first or time.time(), "loaded": time.time()}
            reader.poll(0.5)
        raise TimeoutError(f"the timer loaded {watch.committed()} of {total} in {timeout_s:.0f}s")

    def read_fired(self, reader: Executions, total: int, timeout_s: float) -> None:
        task = self.progress.add_task("fired", total=total, info="")
        deadline = time.time() + timeout_s
        while len(reader.received) < total and time.time() < deadline:
            if self.timer and self.timer.process.poll() is not None:
                code = self.timer.process.returncode
                raise RuntimeError(f"the timer process exited ({code}) after "
                                   f"{len(reader.received)} firings; see its log")  # fmt: skip
            if reader.poll(0.2):
                self.profile()
            self.progress.update(task, completed=len(reader.received), info=self.rss_info())

    def close(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.timer:
            self.timer.stop()
        if self.sampler:
            self.sampler.stop()
        if self.profiler and (summary := self.profiler.summary()):
            extra["py_spy"] = summary
        return extra


def submit(run: Run, task: TaskID, first_due_ms: int, offsets_ms: list[int]) -> float:
    """Submit every job now, on this thread; the seconds it took, acknowledgements included."""
    load = Load("timers", offsets_ms, lead_s=0, paced=False)
    submitter = Submitter(run.settings, JOB_TYPE, load, first_due_ms,
                          lambda n: run.progress.advance(task, n))  # fmt: skip
    submitter.run()
    if submitter.error is not None:
        raise submitter.error
    return submitter.seconds


def _rate(instants_ms: list[int]) -> float:
    if len(instants_ms) < 2:
        return 0.0
    return len(instants_ms) / max((instants_ms[-1] - instants_ms[0]) / 1000, 1e-3)


def _firing(rows: list[tuple[int, int, int]]) -> dict[str, Any]:
    # One transaction's firings share one fired_at, so rates are over whole spans only.
    fired = sorted(f for _, f, _ in rows)
    arrived = sorted(a for _, _, a in rows)
    return {
        "fired": len(fired),
        "first_fired_ms": fired[0] if fired else None,
        "last_fired_ms": fired[-1] if fired else None,
        "firings_per_s": _rate(fired),
        "visible_per_s": _rate(arrived),
        "fire_lateness_ms": measure.summarize([f - s for s, f, _ in rows]),
        "seen_lateness_ms": measure.summarize([a - s for s, _, a in rows]),
    }


def _lateness_rows(result: dict[str, Any], p99_target: bool) -> list[Row]:
    fire, seen = result["fire_lateness_ms"], result["seen_lateness_ms"]
    return [
        Row("fire lateness p50 / p90 / p99 / max (ms)",
            f"{fire['p50']:.0f} / {fire['p90']:.0f} / {fire['p99']:.0f} / {fire['max']:.0f}",
            f"p99 <= {TARGET_P99_MS}" if p99_target else "",
            fire["p99"] <= TARGET_P99_MS if p99_target else None),
        Row("seen lateness p50 / p90 / p99 / max (ms)",
            f"{seen['p50']:.0f} / {seen['p90']:.0f} / {seen['p99']:.0f} / {seen['max']:.0f}"),
    ]  # fmt: skip


def steady(run: Run, count: int, rate: int, lead_s: float) -> tuple[dict[str, Any], list[Row]]:
    timer = run.start_timer()
    timer.wait_log("timer partitions assigned", 120)
    reader, watch = Executions(run.settings), CommittedWatch(run.settings)
    first_due = now_ms() + int(lead_s * 1000)
    task = run.progress.add_task("submit", total=count, info="")
    submit_s = submit(run, task, first_due, [i * 1000 // rate for i in range(count)])
    loaded = run.wait_loaded(watch, reader, watch.end(), 600)
    run.read_fired(reader, count, lead_s + count / rate + 120)
    last_due = first_due + (count - 1) * 1000 // rate
    assert run.sampler is not None
    result: dict[str, Any] = {
        "jobs": count, "rate_per_s": rate, "submit_s": submit_s,
        "loaded_before_first_due_s": first_due / 1000 - loaded["loaded"],
        **_firing(reader.decoded()),
        "timer_cpu_percent": run.sampler.cpu_percent(first_due / 1000, last_due / 1000),
        "timer_peak_rss_mb": run.sampler.peak_rss_mb(),
    }  # fmt: skip
    reader.close()
    watch.close()
    rows = [
        Row("jobs due at a constant rate", f"{count:,} at {rate:,}/s"),
        Row("firings/s (first to last firing)", f"{result['firings_per_s']:,.0f}"),
        *_lateness_rows(result, p99_target=True),
        Row("timer CPU while firing (100% = 1 core)", f"{result['timer_cpu_percent']:.0f}%"),
        Row("timer peak RSS", f"{result['timer_peak_rss_mb']:.0f} MB"),
    ]
    return result, rows


def backlog(run: Run, count: int, window_s: float,
            lead_s: float) -> tuple[dict[str, Any], list[Row]]:  # fmt: skip
    reader, watch = Executions(run.settings), CommittedWatch(run.settings)
    first_due = now_ms() + int(lead_s * 1000)
    task = run.progress.add_task("submit (timer not running)", total=count, info="")
    submit_s = submit(run, task, first_due, [int(i * window_s * 1000 / count)
                                             for i in range(count)])  # fmt: skip
    timer = run.start_timer()
    loaded = run.wait_loaded(watch, reader, watch.end(), lead_s + 600)
    assert run.sampler is not None
    pending = {
        "timer_rss_mb": measure.rss_mb(timer.pid),
        "timer_peak_rss_mb": measure.peak_rss_mb(timer.pid),
        "state_disk_mb": measure.disk_mb(run.dir / "state"),
    }
    run.read_fired(reader, count, first_due / 1000 + window_s - time.time() + 600)
    result: dict[str, Any] = {
        "jobs": count, "window_s": window_s, "submit_s": submit_s,
        "client_submit_per_s": count / submit_s,
        "timer_start_to_loaded_s": loaded["loaded"] - timer.started,
        "timer_intake_per_s": count / max(loaded["loaded"] - loaded["first_commit"], 1e-3),
        "loaded_before_first_due_s": first_due / 1000 - loaded["loaded"],
        "with_all_pending": pending,
        **_firing(reader.decoded()),
    }  # fmt: skip
    firing = (result["first_fired_ms"] or 0) / 1000, (result["last_fired_ms"] or 0) / 1000
    result["timer_cpu_percent_firing"] = run.sampler.cpu_percent(*firing)
    result["timer_peak_rss_mb"] = run.sampler.peak_rss_mb()
    result["state_disk_mb_after"] = measure.disk_mb(run.dir / "state")
    reader.close()
    watch.close()
    rows = [
        Row("client submit rate (JobClient.submit_many)",
            f"{result['client_submit_per_s']:,.0f}/s"),
        Row("timer intake rate", f"{result['timer_intake_per_s']:,.0f}/s"),
        Row(f"timer RSS with {count:,} pending (peak)",
            f"{pending['timer_rss_mb']:.0f} MB ({pending['timer_peak_rss_mb']:.0f} MB)",
            f"< {TARGET_RSS_MB} MB", pending["timer_peak_rss_mb"] < TARGET_RSS_MB),
        Row("state on disk with all pending / after firing",
            f"{pending['state_disk_mb']:.0f} MB / {result['state_disk_mb_after']:.0f} MB"),
        Row(f"firings/s, {count:,} due within {window_s:.0f} s",
            f"{result['firings_per_s']:,.0f} (committed: {result['visible_per_s']:,.0f}/s)",
            f">= {TARGET_FIRINGS_PER_S:,}", result["firings_per_s"] >= TARGET_FIRINGS_PER_S),
        *_lateness_rows(result, p99_target=False),
        Row("timer CPU while firing", f"{result['timer_cpu_percent_firing']:.0f}%"),
        Row("timer peak RSS, firing included", f"{result['timer_peak_rss_mb']:.0f} MB"),
    ]  # fmt: skip
    if result["loaded_before_first_due_s"] < 0:
        rows.append(Row("warning", "intake was still loading when the first job fell due"))
    return result, rows


def restore(run: Run, count: int) -> tuple[dict[str, Any], list[Row]]:
    fill_s = fill_changelog(run.settings, count, run.progress)
    task = run.progress.add_task("restore in this process", total=None, info="")
    inproc = restore_in_process(run.settings, run.dir / "restore")
    run.progress.update(task, completed=inproc["applied"], total=inproc["applied"])
    task = run.progress.add_task("timer start with no local state", total=None, info="")
    timer = run.start_timer()
    run.profile()
    assigned = timer.wait_log("timer partitions assigned", 600)
    cold_s = time.time() - timer.started
    restored = next((r["msg"] for r in timer.records() if r["msg"].startswith("restored")), "")
    run.progress.update(task, total=1, completed=1)
    result: dict[str, Any] = {
        "entries": count, "fill_s": fill_s, "in_process": inproc,
        "timer_start_to_assigned_s": cold_s, "timer_restore_log": restored,
        "timer_rss_after_restore_mb": measure.rss_mb(timer.pid),
        "timer_peak_rss_mb": measure.peak_rss_mb(timer.pid), "assigned_log": assigned,
    }  # fmt: skip
    rows = [
        Row(f"restore {inproc['applied']:,} entries (restore() in process)",
            f"{inproc['seconds']:.1f} s ({inproc['applied'] / inproc['seconds']:,.0f}/s)",
            f"< {TARGET_RESTORE_S} s", inproc["seconds"] < TARGET_RESTORE_S),
        Row("timer process start, empty state dir, to partitions assigned", f"{cold_s:.1f} s",
            f"< {TARGET_RESTORE_S} s", cold_s < TARGET_RESTORE_S),
        Row("timer's own log", restored.split(": ", 1)[-1]),
        Row("restored store on disk", f"{inproc['disk_mb']:.0f} MB"),
        Row("timer RSS after restore (peak)", f"{result['timer_rss_after_restore_mb']:.0f} MB "
            f"({result['timer_peak_rss_mb']:.0f} MB)"),
    ]  # fmt: skip
    return result, rows
