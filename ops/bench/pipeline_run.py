"""One scenario of ``jobstream bench``: the pipeline as processes, jobs in, events out.

A run has a topic prefix and a work folder of its own (state, logs). It starts the
timers, the status processor, the retry router and the workers as ``jobstream``
processes (ops/stack.py), submits the scenario's jobs from a thread, reads jobs.events
until every job has ended (or nothing has ended for ``stall_s`` after the last due
time) and the status processor has committed all of jobs.events, stops the processes,
and tallies the events (ops/bench/tally.py). RSS and CPU of every process, the
broker's and this one's included, are read from /proc; so is what the broker's JIT
compiler threads spent, apart: a broker compiles its hot code over its first runs, a
cost that ends, which a per-job figure should not carry.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import Progress

from jobstream._ops.bench import app as bench_app
from jobstream._ops.bench import measure
from jobstream._ops.bench.events import EventsReader
from jobstream._ops.bench.harness import CommittedWatch, create_topics, settings_env, workdir_for
from jobstream._ops.bench.launches import read_buckets, summarize_buckets
from jobstream._ops.bench.load import Load
from jobstream._ops.bench.profile import Recording, py_spy
from jobstream._ops.bench.submitter import Submitter
from jobstream._ops.bench.tally import tally
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.topics import Topics


@dataclass(frozen=True)
class PipelineShape:
    handler: str = "noop"
    workers: int = 1
    concurrency: int = 64
    metrics_port: int = 29600
    stall_s: float = 60.0
    """Stop waiting when no job has ended for this long after the last due time."""
    py_spy_s: float = 0.0
    """Record every pipeline process with py-spy this long, from 2 s after the first due
    time (0: not at all)."""
    worker_flags: tuple[str, ...] = ()
    """More ``jobstream worker`` options for every worker (``--claim-ahead 10s``)."""


BESIDE_FROM_MS = 5000
"""A steady load beside a scenario's jobs falls due from this long before their first due
time."""


def run_pipeline(settings: Settings, load: Load, shape: PipelineShape, root: Path,
                 broker_pids: dict[str, int], progress: Progress,
                 source: type[Submitter] = Submitter, *,
                 beside: Load | None = None) -> dict[str, Any]:  # fmt: skip
    """Run one scenario and return its numbers (see ops/bench/tally.py); ``source``
    submits its jobs and adds numbers of its own (the workflow scenarios'). ``beside``: a
    steady load offered with it, due from :data:`BESIDE_FROM_MS` before its first due time,
    whose jobs count in the CPU per job and have their own numbers (``beside``)."""
    job_type = bench_app.HANDLERS[shape.handler]
    folder = workdir_for(root, settings)
    create_topics(settings)
    stack = Stack(folder, env=settings_env(settings))
    parts = components(shape.metrics_port, app=bench_app.__name__, job_types=())
    served = tuple(dict.fromkeys(load.job_types)) or (job_type,)
    more_types = tuple(flag for other in served[1:] for flag in ("--type", other))
    parts += [worker(served[0], f"bench-{i}", shape.metrics_port + 3 + i, app=bench_app.__name__,
                     concurrency=shape.concurrency, extra=shape.worker_flags + more_types)
              for i in range(shape.workers)]  # fmt: skip
    starting = progress.add_task("pipeline starting", total=None, info="")
    with contextlib.ExitStack() as running:  # stops what has started, however the run ends
        running.callback(stack.stop)
        stack.start(parts)
        progress.update(starting, total=1, completed=1)
        pids = {name: process.pid for name, (_, process) in stack.processes.items()}
        pids |= broker_pids | {"bench (client, reader)": os.getpid()}
        samplers = {name: measure.ProcessSampler(pid) for name, pid in pids.items()}
        for sampler in samplers.values():
            running.callback(sampler.stop)
        cpu_before = {name: measure.cpu_seconds(pid) for name, pid in pids.items()}
        threads_before = {name: measure.thread_cpu_seconds(pid)
                          for name, pid in broker_pids.items()}  # fmt: skip
        reader = EventsReader(settings)
        running.callback(reader.close)
        t0 = load.first_due_ms(now_ms())
        submitter = source(settings, job_type, load, t0)
        profiler = Profiler(stack, folder, shape.py_spy_s, start_s=t0 / 1000 + 2)
        submitters = [submitter]
        if beside is not None:
            submitters.append(Submitter(settings, job_type, beside, t0 - BESIDE_FROM_MS))
        for one in submitters:
            one.start()
            running.callback(one.join)
            running.callback(one.halt.set)
        total = sum(len(one.load.offsets_ms) for one in submitters)
        last_due_s = max(one.t0_ms + max(one.load.offsets_ms, default=0)
                         for one in submitters) / 1000  # fmt: skip
        _follow(stack, submitters, reader, total, last_due_s, shape.stall_s, progress, profiler)
        status_lag_s = _status_caught_up(settings, progress, timeout_s=shape.stall_s)
        cpu = {name: measure.cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        jit = {name: measure.jit_seconds(threads_before[name], measure.thread_cpu_seconds(pid))
               for name, pid in broker_pids.items()}  # fmt: skip
        pending_rss = samplers["timers"].peak_rss_mb(end=t0 / 1000)
        launched = read_buckets(shape.metrics_port + 3 + i for i in range(shape.workers))
    profiles = profiler.summaries()
    decoding = progress.add_task("decoding events", total=None, info="")
    events = reader.decoded()
    result = tally(submitter.ids, events) | submitter.extra(events)
    completed = result["completed"]
    if beside is not None:
        side = tally(submitters[1].ids, events)
        completed += side["completed"]
        result["beside"] = {"rate_per_s": len(beside.offsets_ms) / max(beside.offsets_ms[-1] / 1000,
                                                                       1e-3),
                            **{key: side[key] for key in BESIDE_KEYS}}  # fmt: skip
    progress.update(decoding, total=1, completed=1)
    pipeline_cpu = sum(v for name, v in cpu.items() if not name.startswith("bench"))
    return {
        "system": "jobstream", "scenario": load.scenario, "handler": shape.handler,
        "workers": shape.workers, "concurrency": shape.concurrency,
        "submit_per_s": len(submitter.ids) / max(submitter.seconds, 1e-3),
        **result,
        "launch_lateness": summarize_buckets(launched),
        "rss_mb": {name: round(s.peak_rss_mb(), 1) for name, s in samplers.items()},
        "timer_rss_all_pending_mb": round(pending_rss, 1),
        "status_caught_up_after_s": status_lag_s,
        "cpu_s": {name: round(v, 2) for name, v in cpu.items()},
        "cpu_us_per_job": 1e6 * pipeline_cpu / max(completed, 1),
        "broker_jit_cpu_s": {name: round(v, 2) for name, v in jit.items()},
        "cpu_us_per_job_without_jit":
            1e6 * (pipeline_cpu - sum(jit.values())) / max(completed, 1),
        "cpu_us_per_job_with_client": 1e6 * sum(cpu.values()) / max(completed, 1),
        "work_dir": str(folder),
        **({"py_spy": profiles} if profiles else {}),
    }  # fmt: skip


BESIDE_KEYS = ("completed", "lost", "start_lateness_ms", "end_lateness_ms")
"""The numbers of the steady load beside a scenario kept apart."""


def _status_caught_up(settings: Settings, progress: Progress, timeout_s: float) -> float | None:
    """Seconds until the status processor has committed all of jobs.events (None: not
    within ``timeout_s``): the jobs have ended, but their statuses may still be coming."""
    started = time.time()
    watch = CommittedWatch(settings, Topics(settings).events, "jobstream.status",
                           settings.events_partitions)  # fmt: skip
    task = progress.add_task("status processor catching up", total=None, info="")
    try:
        while time.time() - started < timeout_s:
            end, done = watch.end(), watch.committed()
            progress.update(task, total=end, completed=done)
            if done >= end - settings.events_partitions:  # the tail's commit markers
                return round(time.time() - started, 1)
            time.sleep(0.5)
        return None
    finally:
        watch.close()


class Profiler:
    """py-spy on every pipeline process at once, started when the run reaches ``start_s``."""

    def __init__(self, stack: Stack, folder: Path, seconds: float, start_s: float) -> None:
        self.stack, self.folder, self.seconds, self.start_s = stack, folder, seconds, start_s
        self.recordings: dict[str, Recording] = {}
        self.executable = py_spy() if seconds > 0 else None
        if seconds > 0 and self.executable is None:
            raise JobstreamError("--py-spy needs py-spy: .venv/bin/pip install py-spy")

    def maybe_start(self, now: float) -> None:
        if self.executable is None or self.recordings or now < self.start_s:
            return
        for name, (_, process) in self.stack.processes.items():
            output = self.folder / f"{name}.pyspy.txt"
            self.recordings[name] = Recording(self.executable, process.pid, self.seconds,
                                              output, idle=False)  # fmt: skip

    def summaries(self) -> dict[str, Any]:
        return {name: recording.summary() for name, recording in self.recordings.items()}


def _follow(stack: Stack, submitters: list[Submitter], reader: EventsReader, total: int,
            last_due_s: float, stall_s: float, progress: Progress,
            profiler: Profiler) -> None:  # fmt: skip
    """Read events until all ``total`` jobs have ended, or none has for ``stall_s`` after
    the last due time; fail at once if a pipeline process or a submitter dies."""
    submitted = progress.add_task("submitted", total=total, info="")
    ended = progress.add_task("ended", total=total, info="")
    last_change, seen = time.time(), 0
    while reader.ended < total:
        reader.poll(0.2)
        now = time.time()
        profiler.maybe_start(now)
        if reader.ended != seen:
            last_change, seen = now, reader.ended
        for submitter in submitters:
            if submitter.error is not None:
                raise JobstreamError(f"submitting failed: {submitter.error}")
        for name, (_, process) in stack.processes.items():
            if process.poll() is not None:
                raise JobstreamError(f"{name} exited with {process.returncode}; its log:\n"
                                     f"{stack.log_tail(name)}")  # fmt: skip
        due_in = last_due_s - now
        info = f"last job due in {due_in:.0f} s" if due_in > 0 else f"{-due_in:.0f} s past due"
        progress.update(submitted, completed=sum(len(one.ids) for one in submitters))
        progress.update(ended, completed=reader.ended, info=info)
        if now > last_due_s and now - max(last_change, last_due_s) > stall_s:
            return
