"""Micro-benchmark of rate limits on the firing path, in one process, no broker.

``python -m jobstream._ops.bench.throttle`` loads ``--jobs`` jobs due at one instant into a timer
processor on a driver (real RocksDB files, pipeline/runtime/driver.py) and fires them all,
tick after tick, three ways:

- ``no limit``: the firing path as it is without limits;
- ``limit, none held``: a type limit high enough that every job gets a token at once
  (the cost of asking the buckets);
- ``limit, all held``: a limit whose bucket is empty when they fall due, raised once they
  are all held, so every job is written into its limit's queue, then read from it and
  fired (the cost of holding a job on disk).

Times are CPU seconds (``time.process_time``) of the firing ticks only, per job fired, in
µs; also the changelog records per job. docs/benchmarks.md, "Rate limits on the firing
path", records a run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import typer
from rich.table import Table

from jobstream._ops.bench.report import console, load_average, write_results
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState

T0 = 1_798_000_000_000
DUE = T0 + 1000
TICK_MS = 20
TYPE = LimitKey(job_type="bench.throttle")


def _job(i: int) -> Event:
    return Event("JobSubmitted", {
        "job_id": f"01JBENCH{i:018d}", "idempotency_key": None, "workflow_id": None,
        "submitted_at_ms": T0,
        "spec": {"job_type": TYPE.job_type, "owner": f"owner-{i % 10}", "params": "{}",
                 "priority": "NORMAL", "run_at_ms": DUE, "cron": None, "depends_on": [],
                 "retry": None, "timeout_ms": None, "labels": {}, "on_parent_failure": "CANCEL",
                 "pool": None},
    })  # fmt: skip


def run(way: str, jobs: int, work: Path) -> dict[str, float]:
    timers = TimerProcessor(load_settings(timer_partitions=1))
    board = timers.logic.throttle.board
    driver: ProcessorDriver[TimerState] = ProcessorDriver(
        timers, work / way.replace(" ", "-").replace(",", ""), now_ms=T0
    )
    for i in range(jobs):
        driver.pipe(timers.topics.intake, _job(i))
    if way == "limit, none held":
        board.set(Limit(TYPE, rate=1e9, burst=jobs))
    elif way == "limit, all held":
        board.set(Limit(TYPE, rate=1e-3, burst=1))
    logged_before = len(driver.changelog[0])
    started = time.process_time()
    driver.now_ms = DUE
    fired = _fired(driver.advance())  # all held but one, when the bucket is empty
    if way == "limit, all held":  # raised: the held jobs leave their queue
        board.set(Limit(TYPE, rate=1e9, burst=jobs))
    ticks = 1
    while fired < jobs and ticks < 1000:
        fired += _fired(driver.advance(TICK_MS))
        ticks += 1
    cpu = time.process_time() - started
    logged = len(driver.changelog[0]) - logged_before
    driver.close()
    return {
        "us_per_job": round(cpu / max(fired, 1) * 1e6, 1),
        "changelog_per_job": round(logged / max(fired, 1), 2),
        "fired": fired,
    }


def _fired(outputs: list) -> int:
    return sum(1 for output in outputs if output.value.name == "ExecutionRequested")


def main(
    jobs: int = typer.Option(20_000, "--jobs", min=100, help="Jobs due at one instant."),
    out: Path | None = typer.Option(None, "--out", help="Write the results here as JSON."),
) -> None:
    """Time firing with and without rate limits, per job."""
    report: dict[str, object] = {"load_average_start": load_average(), "jobs": jobs}
    table = Table(
        "way",
        "µs CPU per job fired",
        "changelog records per job",
        "fired",
        title=f"{jobs:,} jobs due at once, fired by one timer partition",
    )
    with tempfile.TemporaryDirectory() as work:
        for way in ("no limit", "limit, none held", "limit, all held"):
            result = run(way, jobs, Path(work))
            report[way] = result
            table.add_row(
                way,
                f"{result['us_per_job']:.1f}",
                f"{result['changelog_per_job']:.2f}",
                str(result["fired"]),
            )
    report["load_average_end"] = load_average()
    console.print(table)
    write_results(out, report)


if __name__ == "__main__":
    typer.run(main)
