"""``jobstream faults run --scenario <name|all> --jobs N``: the fault-injection suite.

``jobstream faults list`` names the scenarios. A run exits 1 when a scenario lost a
job, ran one twice without a DUPLICATE event, could not wait for every job, or could
not inject its fault; docs/reliability.md explains every number.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import typer

from jobstream._ops.faults import report
from jobstream._ops.faults.run import RunOptions, run_scenario
from jobstream._ops.faults.scenarios import SCENARIOS, Scenario
from jobstream._pipeline.durations import duration_option

FAILOVER = "failover"
"""The scenario of two regions (ops/faults/failover.py), run on its own."""

EPILOG = """Examples:

  jobstream faults run --scenario kill-timers --jobs 1000

  jobstream faults run --scenario all --jobs 2000 --out faults.json

  jobstream faults run --scenario kill-broker --nodes 3 --jobs 2000

  jobstream faults run --scenario workflows --jobs 2000 --map-items 10000

  jobstream faults run --scenario failover --jobs 30000 --window 30s --pending-jobs 1000 \
      --failback-jobs 1000
"""

faults_app = typer.Typer(
    help="Kill and pause the pipeline's processes and brokers while jobs run; count lost "
    "and duplicated jobs.", no_args_is_help=True,
)  # fmt: skip

WindowOption = duration_option("30s", "--window", minimum="1s",
                               help="Time over which the jobs fall due.")  # fmt: skip
DeadlineOption = duration_option(
    "120s", "--deadline", minimum="1s",
    help="How long to wait for the jobs past the last due time and the fault's end.",
)  # fmt: skip


@faults_app.command("run", epilog=EPILOG)
def run(
    scenario: str = typer.Option(..., "--scenario", help="A scenario (see `jobstream faults "
                                 "list`), or 'all'."),
    jobs: int = typer.Option(1000, "--jobs", min=1, help="One-off jobs submitted."),
    nodes: int | None = typer.Option(None, "--nodes", help="Broker nodes, 1 or 3 (default: "
                                     "3 for the broker scenarios, 1 otherwise)."),
    window_ms: int = WindowOption,
    deadline_ms: int = DeadlineOption,
    workdir: Path | None = typer.Option(None, "--workdir", help="Where each run keeps its "
                                        "logs and state (default: a new temporary folder)."),
    out: Path | None = typer.Option(None, "--out", help="Write the results here as JSON."),
    secure: bool = typer.Option(False, "--secure", help="On a secured cluster (TLS, "
                                "SASL/SCRAM, ACLs; docs/kafka-security.md)."),
    outage_ms: int | None = duration_option(
        None, "--outage", minimum="1s",
        help="How long a broker node or the state disk stays down (default: the "
        "scenario's own, 20 s)."),
    map_items: int = typer.Option(100, "--map-items", min=0, max=10_000, help="Items of each "
                                  "map of the workflows scenario."),
    failback_jobs: int = typer.Option(0, "--failback-jobs", min=0, help="failover: jobs "
                                      "pending across a failback (0: no failback)."),
    pending_jobs: int = typer.Option(0, "--pending-jobs", min=0, help="failover: jobs "
                                     "submitted first, due 15 s after the loss, never sent "
                                     "again: only the copied timer state fires them."),
) -> None:  # fmt: skip
    """Run fault scenarios against the whole pipeline and report what the jobs saw."""
    if scenario == FAILOVER:
        _run_failover(jobs, window_ms, deadline_ms, workdir, out, failback_jobs, pending_jobs)
        return
    if nodes not in (None, 1, 3):
        raise typer.BadParameter("1 or 3", param_hint="--nodes")
    chosen = _choose(scenario, nodes)
    folder = workdir or Path(tempfile.mkdtemp(prefix="jobstream-faults-"))
    options = RunOptions(jobs=jobs, nodes=nodes, window_s=window_ms / 1000,
                         deadline_s=deadline_ms / 1000, secure=secure,
                         outage_s=None if outage_ms is None else outage_ms / 1000,
                         map_items=map_items)  # fmt: skip
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results = []
    for one in chosen:
        results.append(run_scenario(one, options, folder, say=report.console.print))
    report.show(results)
    skipped = [s.name for s in SCENARIOS.values() if s not in chosen] if scenario == "all" else []
    if skipped:
        report.console.print(f"not run on {nodes} node(s): {', '.join(skipped)}")
    if out:
        report.write_figures(out, {"started": started, "skipped": skipped, "runs": results})
        report.console.print(f"results: {out}")
    if any(report.problems(result) for result in results):
        raise typer.Exit(1)


def _run_failover(jobs: int, window_ms: int, deadline_ms: int, workdir: Path | None,
                  out: Path | None, failback_jobs: int, pending_jobs: int) -> None:  # fmt: skip
    """The failover scenario (ops/faults/failover.py): two clusters and MirrorMaker 2."""
    from jobstream._ops.faults.failover import FailoverOptions, problems, run_failover

    folder = workdir or Path(tempfile.mkdtemp(prefix="jobstream-faults-"))
    window_s = window_ms / 1000
    options = FailoverOptions(jobs=jobs, window_s=window_s, loss_after_s=window_s / 2,
                              deadline_s=deadline_ms / 1000, pending_jobs=pending_jobs,
                              failback_jobs=failback_jobs)  # fmt: skip
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    result = run_failover(options, folder, tell=report.console.print)
    shown = {k: v for k, v in result.items() if k != "ids"}
    report.console.print_json(data=shown)
    if out:
        report.write_figures(out, {"started": started, "runs": [result]})
        report.console.print(f"results: {out}")
    found = problems(result)
    for problem in found:
        report.console.print(f"[red]{problem}[/red]")
    if found:
        raise typer.Exit(1)


def _choose(name: str, nodes: int | None) -> list[Scenario]:
    if name == "all":
        return [s for s in SCENARIOS.values() if nodes is None or s.nodes <= nodes]
    if name not in SCENARIOS:
        raise typer.BadParameter(f"{name!r} is none of: all, {FAILOVER}, {', '.join(SCENARIOS)}",
                                 param_hint="--scenario")  # fmt: skip
    chosen = SCENARIOS[name]
    if nodes is not None and nodes < chosen.nodes:
        raise typer.BadParameter(f"{name} needs {chosen.nodes} nodes", param_hint="--nodes")
    return [chosen]


@faults_app.command("list")
def list_scenarios() -> None:
    """Name every scenario and what it does."""
    for scenario in SCENARIOS.values():
        report.console.print(f"[bold]{scenario.name}[/bold] ({scenario.nodes} node(s)): "
                             f"{scenario.summary}")  # fmt: skip
    report.console.print(f"[bold]{FAILOVER}[/bold] (two clusters, MirrorMaker 2; not in 'all'): "
                         "lose the primary region mid-load, start the pipeline on the "
                         "standby; with --failback-jobs, fail back with jobs pending.")  # fmt: skip


@faults_app.command("grow")
def grow(
    pending: int = typer.Option(100_000, "--pending", min=1, help="One-off jobs pending in "
                                "the timers' stores when their topics grow."),
    recurring: int = typer.Option(1000, "--recurring", min=0, help="Recurring jobs pending "
                                  "then, each due soon after the grow."),
    load: int = typer.Option(200, "--load", min=0, help="Jobs submitted each second "
                             "throughout (each due 1.5 s later)."),
    partitions: int = typer.Option(6, "--from", min=1, help="The timers' partitions at first."),
    grow_to: int = typer.Option(12, "--to", min=2, help="The timers' partitions after."),
    workdir: Path | None = typer.Option(None, "--workdir", help="Where the timers keep "
                                        "their logs and state (default: a new temporary "
                                        "folder)."),
    out: Path | None = typer.Option(None, "--out", help="Write the figures here as JSON."),
) -> None:  # fmt: skip
    """Grow the timers' partitions under load on the configured broker (1 timer process,
    then 2); count jobs lost or fired twice, recurring jobs off their schedule, and how late
    the firings after the change were. Exits 1 on any loss, double or firing past 2 s."""
    from jobstream._ops.faults.grow import run_grow

    if grow_to <= partitions:
        raise typer.BadParameter(f"must be more than --from ({partitions})", param_hint="--to")
    folder = workdir or Path(tempfile.mkdtemp(prefix="jobstream-grow-"))
    figures = run_grow(folder, pending=pending, recurring=recurring, load=load,
                       partitions=partitions, grow_to=grow_to)  # fmt: skip
    report.console.print_json(data=figures)
    if out:
        report.write_figures(out, figures)
    if figures["lost"] or figures["fired_twice"] or figures["recurring_off_schedule"] or (
        figures["recurring_next_run_missing"] or figures["max_late_ms"] > 2000
    ):  # fmt: skip
        raise typer.Exit(1)


@faults_app.command("grow-events")
def grow_events(
    finished: int = typer.Option(20_000, "--finished", min=0, help="Jobs run to their end "
                                 "before the grow: records the status stores hold."),
    long: int = typer.Option(100, "--long", min=1, help="Runs of 8 s started before the "
                             "grow, heartbeating across it."),
    load: int = typer.Option(100, "--load", min=0, help="Short jobs submitted each second "
                             "around the grow."),
    partitions: int = typer.Option(6, "--from", min=1, help="jobs.events' partitions at first."),
    grow_to: int = typer.Option(12, "--to", min=2, help="jobs.events' partitions after."),
    workdir: Path | None = typer.Option(None, "--workdir", help="Where the processes keep "
                                        "their logs and state (default: a new temporary "
                                        "folder)."),
    out: Path | None = typer.Option(None, "--out", help="Write the figures here as JSON."),
) -> None:  # fmt: skip
    """Grow jobs.events under load on the configured broker (the pipeline as processes, 1
    status processor, then 2; a worker killed after the grow); count jobs that did not
    succeed once, runs the grow declared lost, duplicates, and how long statuses lagged.
    Exits 1 on any of them, or a killed run not declared lost exactly once."""
    from jobstream._ops.faults.grow_events import run_events_grow

    if grow_to <= partitions:
        raise typer.BadParameter(f"must be more than --from ({partitions})", param_hint="--to")
    folder = workdir or Path(tempfile.mkdtemp(prefix="jobstream-grow-events-"))
    figures = run_events_grow(folder, finished=finished, long=long, load=load,
                              partitions=partitions, grow_to=grow_to)  # fmt: skip
    report.console.print_json(data=figures)
    if out:
        report.write_figures(out, figures)
    if not figures["ok"]:
        raise typer.Exit(1)
