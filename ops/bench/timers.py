"""``jobstream bench-timers``: the timer processor alone against a broker.

Three scenarios (ops/bench/scenarios.py), each with its own topic prefix:

- ``steady``: jobs due at a constant rate (default 1,200/s for 60 s); fire lateness.
- ``backlog``: 1,000,000 jobs submitted, then loaded by the timer, then all due within
  a short window: intake rates, memory and disk with them pending, firing throughput.
- ``restore``: a changelog partition of 1,000,000 entries rebuilt into an empty store.

Results print as a table and, with ``--out``, as JSON; docs/benchmarks.md ("Timers alone")
has the figures, docs/benchmarks-history.md the runs.
"""

from __future__ import annotations

import enum
import time
from pathlib import Path

import typer
from rich.table import Table

from jobstream._ops.bench import options
from jobstream._ops.bench.harness import broker, run_topics
from jobstream._ops.bench.report import Row, console, load_average, progress_bar, write_results
from jobstream._ops.bench.scenarios import BACKLOG_COUNT, Run, backlog, restore, steady
from jobstream._pipeline.durations import duration_option


class Scenario(enum.StrEnum):
    steady = "steady"
    backlog = "backlog"
    restore = "restore"


DurationOption = duration_option("60s", "--duration", help="steady: time of due jobs.")
WindowOption = duration_option("30s", "--window", help="backlog: every job due within this.")
LeadOption = duration_option(
    None, "--lead", help="Time from submission to the first due job; default 15s (steady), "
    "from --count.",
)  # fmt: skip
PySpyOption = options.py_spy_option(
    "the timer this long once it fires (restore: while it restores; 0s: not at all)"
)


def _table(title: str, rows: list[Row]) -> Table:
    table = Table("metric", "measured", "target", "", title=title)
    for row in rows:
        verdict = {None: "", True: "[green]met[/green]", False: "[red]missed[/red]"}[row.ok]
        table.add_row(row.metric, row.value, row.target, verdict)
    return table


def bench_timers(
    scenario: Scenario = typer.Option(Scenario.steady, "--scenario", help="What to measure."),
    count: int | None = typer.Option(None, "--count", min=1,
                                     help="Jobs; default: rate x duration (steady), 1,000,000."),
    rate: int = typer.Option(1200, "--rate", min=1, help="steady: jobs due per second."),
    duration_ms: int = DurationOption,
    window_ms: int = WindowOption,
    lead_ms: int | None = LeadOption,
    partitions: int = typer.Option(6, "--partitions", min=1, help="Timer partitions (restore: 1)."),
    exec_partitions: int = options.ExecPartitionsOption,
    bootstrap: str | None = options.BootstrapOption,
    port: int = options.PortOption,
    workdir: Path = options.WorkdirOption,
    kafka_home: Path | None = options.KafkaHomeOption,
    out: Path | None = options.OutOption,
    py_spy_ms: int = PySpyOption,
) -> None:  # fmt: skip
    """Benchmark the timer processor: intake, firing rate, lateness, memory, restore."""
    duration_s, window_s, py_spy_s = duration_ms / 1000, window_ms / 1000, py_spy_ms / 1000
    lead_s = None if lead_ms is None else lead_ms / 1000
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_at_start = load_average()
    with (
        broker(bootstrap, options.kafka_home_of(kafka_home, workdir), port) as kafka,
        progress_bar() as bar,
        run_topics(kafka.bootstrap, exec_partitions=exec_partitions,
                   timer_partitions=1 if scenario is Scenario.restore else partitions) as settings,
    ):
        partitions = settings.timer_partitions
        run = Run(settings, workdir, bar, py_spy_s)
        try:
            if scenario is Scenario.steady:
                n = count or int(rate * duration_s)
                result, rows = steady(run, n, rate, 15.0 if lead_s is None else lead_s)
            elif scenario is Scenario.backlog:
                n = count or BACKLOG_COUNT
                # Submitting (~16k/s on the 2-core machine) and loading (~10k/s) must end
                # before the first job falls due; the margin is in the results.
                lead = lead_s if lead_s is not None else 30 + n / 4500
                result, rows = backlog(run, n, window_s, lead)
            else:
                result, rows = restore(run, count or BACKLOG_COUNT)
        finally:
            extra = run.close()
    result.update(extra)
    # Other work on the machine moves every number here: keep the load beside them.
    report = {"scenario": scenario.value, "started": started, "topic_prefix":
              settings.topic_prefix, "timer_partitions": partitions,
              "load_average_start": load_at_start, "load_average_end": load_average(),
              **result}  # fmt: skip
    console.print(_table(f"timers: {scenario.value}", rows))
    for kind in ("self", "total"):
        for frame, share in extra.get("py_spy", {}).get(kind, []):
            console.print(f"py-spy {kind:5} {share:5.1f}%  {frame}")
    write_results(out, report)


if __name__ == "__main__":
    from jobstream._pipeline.logs import configure_logging

    configure_logging("WARNING")
    typer.run(bench_timers)
