"""``jobstream bench``: the whole pipeline, end to end, beside Celery on Redis.

Scenarios (ops/bench/pipeline_run.py): ``steady`` (``--rate`` jobs due per second for
``--duration``, each submitted ``--lead`` ahead), ``burst`` (``--burst`` jobs due at one
instant), ``backlog`` (``--count`` jobs pending, then due within ``--window``), and two
workflow scenarios (ops/bench/workflow_load.py): ``fanout`` (``--children`` jobs that
depend on one parent) and ``diamonds`` (``--diamonds`` workflows A -> B, C -> D), which
report the release lateness of the children; times are durations such as ``60s`` or
``2m``. Handlers: ``noop`` and ``sleep10``. With ``--peer celery`` the steady and burst
scenarios run again on Celery with a Redis broker (ops/bench/peer/), in the same command,
and the table gives jobstream/Celery ratios.
``fairness`` offers ``--burst`` jobs of one owner and ``--small`` of another, all due at
one instant, and reports each owner's start lateness (docs/fairness.md). ``top-of-hour``
offers ``--cron-jobs`` cron jobs of 50 types and 50 owners, all due at the top of the next
minute (no-op handlers; with ``--peer celery``, Celery gets as many one-off tasks due at one
instant, as the burst's).

The table prints at the end, a progress bar while it runs; ``--out`` writes the JSON.
docs/benchmarks.md explains every number; docs/benchmarks-history.md records the runs.
"""

from __future__ import annotations

import enum
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from jobstream._ops.bench import options
from jobstream._ops.bench.app import HANDLERS, HOURLY_TYPES
from jobstream._ops.bench.harness import broker, run_topics
from jobstream._ops.bench.load import Load
from jobstream._ops.bench.measure import reference_cpu_ms
from jobstream._ops.bench.pipeline_run import PipelineShape, run_pipeline
from jobstream._ops.bench.release_hops import HOPS, hop_key
from jobstream._ops.bench.report import console, load_average, progress_bar, write_results
from jobstream._ops.bench.submitter import Submitter
from jobstream._ops.bench.targets import verdicts
from jobstream._ops.bench.workflow_load import WorkflowSubmitter, diamonds_load, fanout_load
from jobstream._pipeline.durations import duration_option


class Scenario(enum.StrEnum):
    steady = "steady"
    burst = "burst"
    backlog = "backlog"
    fanout = "fanout"
    diamonds = "diamonds"
    fairness = "fairness"
    top_of_hour = "top-of-hour"


class Handler(enum.StrEnum):
    noop = "noop"
    sleep10 = "sleep10"


class Peer(enum.StrEnum):
    celery = "celery"
    none = "none"


DurationOption = duration_option("60s", "--duration", minimum="1s", help="steady: time of jobs.")
WindowOption = duration_option(
    "200s", "--window", minimum="1s", help="backlog: time within which they all fall due.",
)  # fmt: skip
LeadOption = duration_option(
    None, "--lead", help="steady: time each job is submitted ahead (default 5s); burst, backlog: "
    "time to the first due time (default: from the count).",
)  # fmt: skip
PySpyOption = options.py_spy_option(
    "every pipeline process this long once jobs fall due (0s: not at all)"
)


def _offered(scenario: Scenario, **sizes: int) -> dict[str, int]:
    """What the scenario offers, and only that: jobs per second (steady), jobs due at one
    instant (burst), jobs pending (backlog), children of one parent (fanout), diamonds, or
    the two owners' jobs (fairness)."""
    if scenario is Scenario.fairness:
        return {"burst": sizes["burst"], "small": sizes["small"]}
    key = {Scenario.steady: "rate", Scenario.burst: "burst", Scenario.backlog: "count",
           Scenario.fanout: "fanout", Scenario.diamonds: "diamonds",
           Scenario.top_of_hour: "cron_jobs"}[scenario]  # fmt: skip
    return {key: sizes[key]}


ClaimAheadOption = duration_option(
    None, "--claim-ahead", help="Workers' --claim-ahead: how long before its instant a job "
    "fired ahead (JOBSTREAM_FIRE_LEAD) is claimed (default: theirs).")  # fmt: skip
ClaimedAheadMostOption = typer.Option(None, "--claimed-ahead-most", min=1,
                                      help="Workers' --claimed-ahead-most (default: theirs).")


def bench(
    scenario: Scenario = typer.Option(Scenario.steady, "--scenario", help="What to offer."),
    rate: int = typer.Option(1200, "--rate", min=1, help="steady: jobs due per second."),
    duration_ms: int = DurationOption,
    burst: int = typer.Option(20_000, "--burst", min=1,
                              help="burst: jobs due at one instant; fairness: owner-a's."),
    small: int = typer.Option(100, "--small", min=1, help="fairness: owner-b's jobs."),
    cron_jobs: int = typer.Option(10_000, "--cron-jobs", min=1,
                                  help="top-of-hour: cron jobs due at the next minute's :00."),
    beside: int = typer.Option(0, "--beside", min=0,
                               help="burst, top-of-hour: a steady load of this many jobs due a "
                               "second beside them, from 5 s before their instant for 20 s "
                               "(jobstream only; 0: none)."),
    count: int = typer.Option(1_000_000, "--count", min=1, help="backlog: jobs pending."),
    window_ms: int = WindowOption,
    children: int = typer.Option(10_000, "--children", min=1, help="fanout: children."),
    diamonds: int = typer.Option(1_000, "--diamonds", min=1, help="diamonds: workflows."),
    lead_ms: int | None = LeadOption,
    handler: Handler = typer.Option(Handler.noop, "--handler", help="What a job does."),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
    concurrency: int = typer.Option(64, "--concurrency", min=1, help="Jobs per worker at once."),
    peer: Peer = typer.Option(Peer.celery, "--peer",
                              help="Run steady, burst and top-of-hour on Celery too."),
    partitions: int = typer.Option(6, "--partitions", min=1, help="Timer partitions."),
    exec_partitions: int = options.ExecPartitionsOption,
    bootstrap: str | None = options.BootstrapOption,
    port: int = options.PortOption,
    metrics_port: int = typer.Option(29600, "--metrics-port",
                                     help="First /healthz port of the pipeline's processes."),
    workdir: Path = options.WorkdirOption,
    kafka_home: Path | None = options.KafkaHomeOption,
    out: Path | None = options.OutOption,
    py_spy_ms: int = PySpyOption,
    claim_ahead_ms: int | None = ClaimAheadOption,
    claimed_ahead_most: int | None = ClaimedAheadMostOption,
) -> None:  # fmt: skip
    """Benchmark the whole pipeline: jobs/s, fire and start lateness, losses, CPU, memory."""
    duration_s, window_s, py_spy_s = duration_ms / 1000, window_ms / 1000, py_spy_ms / 1000
    lead_s = None if lead_ms is None else lead_ms / 1000
    if scenario is Scenario.steady:
        load = Load.steady(rate, duration_s, 5.0 if lead_s is None else lead_s)
    elif scenario is Scenario.burst:
        load = Load.burst(burst, lead_s)
    elif scenario is Scenario.fairness:
        load = Load.two_owners(burst, small, lead_s)
    elif scenario is Scenario.backlog:
        load = Load.backlog(count, window_s, lead_s)
    elif scenario is Scenario.top_of_hour:
        load = Load.top_of_hour(cron_jobs, HOURLY_TYPES, HOURLY_OWNERS, lead_s)
    elif scenario is Scenario.fanout:
        load = fanout_load(children, lead_s)
    else:
        load = diamonds_load(diamonds, lead_s)
    source = Submitter if scenario in SINGLE_JOBS else WorkflowSubmitter
    with_peer = peer is Peer.celery and scenario in WITH_PEER
    worker_flags = (*(() if claim_ahead_ms is None else ("--claim-ahead", f"{claim_ahead_ms}ms")),
                    *(() if claimed_ahead_most is None else
                      ("--claimed-ahead-most", str(claimed_ahead_most))))  # fmt: skip
    shape = PipelineShape(handler.value, workers, concurrency, metrics_port, py_spy_s=py_spy_s,
                          worker_flags=worker_flags)  # fmt: skip
    report: dict[str, Any] = {
        "command": " ".join(["jobstream", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": _machine(),
        "load_average_start": load_average(),
        **_offered(scenario, rate=rate, burst=burst, count=count, fanout=children,
                   diamonds=diamonds, small=small, cron_jobs=cron_jobs),
    }  # fmt: skip
    if with_peer:
        from jobstream._ops.bench.peer import ensure_installed

        ensure_installed(console.print)
    with (
        broker(bootstrap, options.kafka_home_of(kafka_home, workdir), port) as kafka,
        progress_bar() as bar,
        run_topics(kafka.bootstrap, timer_partitions=partitions, exec_partitions=exec_partitions,
                   job_types=tuple(dict.fromkeys((HANDLERS[handler.value],
                                                  *load.job_types)))) as settings,
    ):
        report.update(run_pipeline(settings, load, shape, workdir, kafka.pids, bar, source,
                                   beside=_beside(scenario, beside)))
        if with_peer:
            from jobstream._ops.bench.peer import run_peer

            # Celery submits a burst ten times slower: its jobs get the time it needs.
            peer_load = load
            if scenario in (Scenario.burst, Scenario.top_of_hour):
                jobs = len(load.offsets_ms)
                peer_load = Load.burst(jobs, lead_s or 10 + jobs / 600)
            report["peer"] = run_peer(load=peer_load, handler=handler.value,
                                      workdir=workdir / "celery", port=port + 1000,
                                      progress=bar)  # fmt: skip
            report["ratios"] = _ratios(report, report["peer"])
    report["load_average_end"] = load_average()
    report["machine"]["reference_cpu_ms_end"] = reference_cpu_ms()
    console.print(_table(report))
    for name, profile in report.get("py_spy", {}).items():
        for frame, share in profile.get("self", [])[:5]:
            console.print(f"py-spy {name:18} {share:5.1f}%  {frame}")
    write_results(out, report)


def _beside(scenario: Scenario, rate: int) -> Load | None:
    """The steady load ``--beside`` offers with a burst or the top of the hour."""
    if not rate or scenario not in (Scenario.burst, Scenario.top_of_hour):
        return None
    return Load.steady(rate, BESIDE_S, BESIDE_LEAD_S)


BESIDE_S = 20.0
BESIDE_LEAD_S = 5.0
"""Each job of the steady load beside is submitted this long before it is due."""
SINGLE_JOBS = (Scenario.steady, Scenario.burst, Scenario.backlog, Scenario.fairness,
               Scenario.top_of_hour)
WITH_PEER = (Scenario.steady, Scenario.burst, Scenario.top_of_hour)
HOURLY_OWNERS = 50
"""The top of the hour's owners (ops/bench/app.py has its 50 types)."""


def _machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(),
            "reference_cpu_ms": reference_cpu_ms()}  # fmt: skip


RATIO_KEYS = ("jobs_per_s", "submit_per_s", "cpu_us_per_job")


def _ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    """jobstream / Celery: rates, CPU per job, and the p99 of start and end lateness."""

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    ratios = {key: ratio(ours.get(key), theirs.get(key)) for key in RATIO_KEYS}
    for key in ("start_lateness_ms", "end_lateness_ms"):
        ratios[key] = ratio(ours[key]["p99"], theirs[key]["p99"])
    return ratios


def _fmt(value: Any) -> str:
    if isinstance(value, dict) and "p50_within_ms" in value:  # a histogram's buckets
        return " / ".join(_fmt(value[f"p{q}_within_ms"]) for q in (50, 90, 99))
    if isinstance(value, dict) and "p50" in value:
        return " / ".join(f"{value[q]:,.0f}" for q in ("p50", "p90", "p99", "max"))
    if isinstance(value, float):
        return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


ROWS = (
    ("submitted", "submitted"), ("completed", "completed"), ("lost", "lost"),
    ("duplicate runs (unreported)", "duplicates"), ("submit rate /s", "submit_per_s"),
    ("end-to-end jobs/s", "jobs_per_s"),
    ("fire lateness ms p50 / p90 / p99 / max", "fire_lateness_ms"),
    ("start lateness ms p50 / p90 / p99 / max", "start_lateness_ms"),
    ("handler launch lateness ms, within p50 / p90 / p99", "launch_lateness"),
    ("end lateness ms p50 / p90 / p99 / max", "end_lateness_ms"),
    ("CPU µs per job (pipeline + broker)", "cpu_us_per_job"),
    ("  without the broker's JIT compiler", "cpu_us_per_job_without_jit"),
    ("status processor caught up, s after the last end", "status_caught_up_after_s"),
)  # fmt: skip
WORKFLOW_ROWS = (
    ("children started / children", "children_started"),
    ("release lateness ms p50 / p90 / p99 / max", "release_lateness_ms"),
    ("  of it to SCHEDULED (released) p50 / p90 / p99 / max", "release_scheduled_lateness_ms"),
    ("  of it to FIRED p50 / p90 / p99 / max", "release_fire_lateness_ms"),
    *((f"  hop {hop} p50 / p90 / p99 / max", hop_key(hop)) for hop in HOPS),
    ("children started per second", "children_start_per_s"),
)  # fmt: skip


def _table(report: dict[str, Any]) -> Table:
    peer = report.get("peer") or {}
    title = f"bench: {report['scenario']}, handler {report['handler']}"
    peer_columns = ["celery", "ratio (lateness: p99)"] if peer else []
    table = Table("metric", "jobstream", *peer_columns, title=title)
    ratios = report.get("ratios") or {}
    workflow_rows = WORKFLOW_ROWS if "children" in report else ()
    for label, key in (*ROWS, *workflow_rows):
        value = _fmt(report.get(key))
        if key == "children_started":
            value += f" / {report['children']:,}"
        if key == "duplicates":
            value += f" ({report['duplicates_unreported']})"
        cells = [label, value]
        if peer:
            cells += [_fmt(peer.get(key)), _fmt(ratios.get(key))]
        table.add_row(*cells)
    side = report.get("beside")
    if side:
        table.add_row(f"beside, {side['rate_per_s']:,.0f} jobs/s: start lateness ms p50 / p90 / "
                      f"p99 / max (lost)", f"{_fmt(side['start_lateness_ms'])} ({side['lost']})")
    by_owner = report.get("start_lateness_by_owner_ms") or {}
    if len(by_owner) > 1:
        for owner, summary in by_owner.items():
            table.add_row(f"start lateness ms, {owner}", _fmt(summary))
    jit = report.get("broker_jit_cpu_s", {})
    for name, mb in report["rss_mb"].items():
        cpu = report["cpu_s"].get(name, 0)
        of_it = f" ({jit[name]:,.1f} JIT)" if name in jit else ""
        table.add_row(f"{name}: peak RSS MB, CPU s", f"{mb:,.0f}, {cpu:,.1f}{of_it}")
    for name, mb in peer.get("rss_mb", {}).items():
        cpu = peer.get("cpu_s", {}).get(name, 0)
        table.add_row(f"{name}: peak RSS MB, CPU s", "", f"{mb:,.0f}, {cpu:,.1f}", "")
    machine = report["machine"]
    table.add_row("machine: reference loop CPU ms, at start / end",
                  f"{machine['reference_cpu_ms']:,.1f} / {machine['reference_cpu_ms_end']:,.1f}")
    for row in verdicts(report):
        mark = "[green]met[/green]" if row.ok else "[red]missed[/red]"
        table.add_row(f"target: {row.metric}", f"{row.value} {mark}")
    return table


if __name__ == "__main__":
    from jobstream._pipeline.logs import configure_logging

    configure_logging("WARNING")
    typer.run(bench)
