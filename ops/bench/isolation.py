"""Micro-benchmark of where handlers run: the cost of a no-op job in threads and processes.

``python -m jobstream._ops.bench.isolation`` runs ``--jobs`` no-op jobs (ops/bench/app.py's
``bench.noop``) through each of the worker's executors as its runtime drives them
(submit a run, take its ``Finished`` off a queue), in one process, no broker:

- ``thread``: :class:`~jobstream._pipeline.worker.executor.JobExecutor`, the default;
- ``process``: :class:`~jobstream._pipeline.worker.processes.ProcessExecutor` (``--isolation
  process``), its children started and warm before the clock starts;

each one run at a time (what a run adds to a job's latency) and with ``--in-flight`` runs
kept going (a busy worker's throughput). Per job: wall time, and CPU time of the
benchmark's process plus the children (from /proc). Also, for processes, how long a
child takes to start and answer its first run (what a crash or a timeout costs on top of
the run) and one child's memory. docs/benchmarks.md, "Process isolation", records a run.
"""

from __future__ import annotations

import queue
import time
from itertools import count
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from jobstream._ops.bench import measure
from jobstream._ops.bench.app import NOOP
from jobstream._ops.bench.report import console, load_average, write_results
from jobstream._pipeline.model.records import ExecutionRequested, JobSpec
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.context import JobContext, build_context
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.processes import ProcessExecutor

APP = "jobstream._ops.bench.app"
WARM_JOBS = 200


def _context() -> JobContext:
    execution = ExecutionRequested(
        job_id="01JBENCHISOLATION000000000", execution_id="01JBENCHISOLATION:1:0",
        scheduled_at_ms=0, fired_at_ms=0, spec=JobSpec(job_type=NOOP, owner="bench"),
    )  # fmt: skip
    return build_context(execution, worker_id="bench", started_ms=0, timeout_s=30)


def run(isolation: str, jobs: int, in_flight: int) -> dict[str, Any]:
    """``jobs`` no-op runs, ``in_flight`` at a time, through one executor."""
    app = load_app(APP)
    handler = app.get(NOOP)
    ctx = _context()
    ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()
    executor: JobExecutor | ProcessExecutor
    if isolation == "process":
        executor = ProcessExecutor.for_app(app, in_flight, ends.put)
    else:
        executor = JobExecutor(in_flight, ends.put)
    tokens = count(1)
    result: dict[str, Any] = {}
    try:
        started = time.monotonic()
        for _ in range(in_flight):  # starts every child (or thread)
            executor.submit(next(tokens), handler, ctx)
        for _ in range(in_flight):
            ends.get(timeout=120)
        if isolation == "process":
            result["first_runs_ms"] = round((time.monotonic() - started) * 1000, 1)
        _drive(executor, ends, handler, ctx, tokens, WARM_JOBS, in_flight)
        children = executor.pids if isinstance(executor, ProcessExecutor) else []
        cpu_before = time.process_time() + sum(map(measure.cpu_seconds, children))
        wall_before = time.perf_counter()
        _drive(executor, ends, handler, ctx, tokens, jobs, in_flight)
        wall = time.perf_counter() - wall_before
        cpu = time.process_time() + sum(map(measure.cpu_seconds, children)) - cpu_before
        result |= {"wall_us_per_job": round(wall / jobs * 1e6, 1),
                   "cpu_us_per_job": round(cpu / jobs * 1e6, 1),
                   "jobs_per_s": round(jobs / wall)}  # fmt: skip
        if children:
            result["child_rss_mb"] = round(measure.rss_mb(children[0]), 1)
    finally:
        executor.close()
    return result


def _drive(executor: JobExecutor | ProcessExecutor, ends: queue.SimpleQueue[Finished],
           handler: Any, ctx: JobContext, tokens: count[int], jobs: int,
           in_flight: int) -> None:  # fmt: skip
    submitted = done = 0
    while done < jobs:
        while submitted - done < in_flight and submitted < jobs:
            executor.submit(next(tokens), handler, ctx)
            submitted += 1
        end = ends.get(timeout=120)
        if end.result is None:
            raise RuntimeError(f"a no-op run did not succeed: {end}")
        done += 1


def main(
    jobs: int = typer.Option(20_000, "--jobs", min=100, help="No-op jobs per way."),
    in_flight: int = typer.Option(8, "--in-flight", min=2,
                                  help="Runs kept going at once (the worker's concurrency)."),
    out: Path | None = typer.Option(None, "--out", help="Write the results here as JSON."),
) -> None:  # fmt: skip
    """Time a no-op job in thread and process isolation, per job."""
    report: dict[str, Any] = {"load_average_start": load_average(), "jobs": jobs}
    table = Table("isolation", "in flight", "wall µs per job", "CPU µs per job", "jobs/s",
                  "first runs (ms)", "child RSS (MB)",
                  title=f"{jobs:,} no-op jobs through the worker's executor")  # fmt: skip
    for isolation in ("thread", "process"):
        for flight in (1, in_flight):
            result = run(isolation, jobs, flight)
            report[f"{isolation}, {flight} in flight"] = result
            table.add_row(isolation, str(flight), f"{result['wall_us_per_job']:.1f}",
                          f"{result['cpu_us_per_job']:.1f}", f"{result['jobs_per_s']:,}",
                          str(result.get("first_runs_ms", "")),
                          str(result.get("child_rss_mb", "")))  # fmt: skip
    report["load_average_end"] = load_average()
    console.print(table)
    write_results(out, report)


if __name__ == "__main__":
    typer.run(main)
