"""A fault run's results on screen (a rich table, the fault's steps) and as JSON."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

import orjson
from rich.table import Table

from jobstream._ops.bench.report import console
from jobstream._ops.faults import triggers

COLUMNS = (
    ("scenario", "scenario"), ("jobs", "submitted"), ("ended", "ended"), ("lost", "lost"),
    ("ran twice", "run_more_than_once"), ("flagged", "flagged"),
    ("unflagged", "unflagged_duplicate_runs"), ("start late s", "start_lateness_ms"),
    ("stall s", "stall_ms"), ("recover s", "recovery_ms"),
    ("recover new s", "recovery_new_jobs_ms"),
)  # fmt: skip


def problems(result: dict[str, Any]) -> list[str]:
    """What makes a run fail: a job lost, a duplicate run nobody was told of, a run that
    could not wait for every job, or a fault that could not be injected."""
    found = []
    if result["lost"]:
        found.append(f"{result['lost']} jobs lost")
    if result["unflagged_duplicate_runs"]:
        found.append(f"{result['unflagged_duplicate_runs']} jobs ran more than once unflagged")
    if result["ending"] != "all ended":
        found.append(f"waiting ended by {result['ending']}")
    if result["fault_error"]:
        found.append(f"the fault failed: {result['fault_error']}")
    flows = result.get("workflows") or {}
    for key, what in (("lost", "workflow jobs lost"), ("dead_lettered", "workflow jobs "
                      "dead-lettered (a join saw its map's items out of order)"),
                      ("unflagged_duplicate_runs", "workflow jobs ran more than once unflagged")):
        if flows.get(key):
            found.append(f"{flows[key]} {what}")
    fed = result.get("triggers")
    if fed is not None:
        for key, what in (("lost", "trigger jobs lost"), ("unflagged_duplicate_runs",
                          "trigger jobs ran more than once unflagged")):  # fmt: skip
            if fed[key]:
                found.append(f"{fed[key]} {what}")
        found += triggers.problems(fed)
    return found


def table(results: list[dict[str, Any]]) -> Table:
    view = Table(*(label for label, _ in COLUMNS), title="jobstream faults")
    for result in results:
        view.add_row(*(_cell(key, result[key]) for _, key in COLUMNS))
    return view


def _cell(key: str, value: Any) -> str:
    if key == "start_lateness_ms":
        value = value["max"]
    if value is None:
        return "-"
    if key.endswith("_ms"):
        return f"{value / 1000:.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def show(results: list[dict[str, Any]]) -> None:
    for result in results:
        console.print(f"[bold]{result['scenario']}[/bold] ({result['nodes']} node(s), "
                      f"{result['seconds']:.0f} s): {result['summary']}")  # fmt: skip
        for note in result["fault"]:
            console.print(f"  {note['at_s']:7.1f} s  {note['action']}")
        for exit in result["unexpected_exits"]:
            console.print(f"  [red]{exit['name']} exited with {exit['code']} on its own "
                          f"at {exit['at_s']:.1f} s[/red]")  # fmt: skip
        for problem in problems(result):
            console.print(f"  [red]{problem}[/red]")
        flows = result.get("workflows")
        if flows:
            console.print(f"  workflows' jobs: {flows['submitted']} submitted, {flows['ended']} "
                          f"ended, {flows['lost']} lost, {flows['dead_lettered']} dead-lettered, "
                          f"{flows['unflagged_duplicate_runs']} run twice unflagged")  # fmt: skip
        fed = result.get("triggers")
        if fed:
            console.print(f"  trigger: {fed['source_records']} source records, {fed['matching']} "
                          f"matching, {fed['skipped']} not, {fed['unparseable']} unparseable; "
                          f"{fed['ended']} jobs ended, {fed['never_fired']} matching records "
                          f"without their job, {fed['fired_twice']} jobs fired twice, "
                          f"{fed['jobs_not_of_a_matching_record']} jobs of no matching record, "
                          f"{fed['dead_lettered']} of {fed['unparseable']} unparseable in "
                          "jobs.triggers.dlq")  # fmt: skip
        for name, ids in result["ids"].items():
            if ids and name != "run_more_than_once":
                console.print(f"  {name}: {', '.join(ids)}")
        for job_id in [*result["ids"]["lost"][:2], *result["ids"]["unflagged"][:2]]:
            history = result["evidence"][job_id]
            console.print(f"  {job_id} (times from the first due time):")
            for line in [*history["events"], *history["runs"]]:
                console.print(f"    {line}", highlight=False)
        console.print(f"  logs: {result['logs']}")
    console.print(table(results))


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}  # fmt: skip


def write_figures(path: Path, figures: dict[str, Any]) -> None:
    """A run's figures as JSON at ``path``, with the command that made them and the machine."""
    write(path, {"command": " ".join(["jobstream", *sys.argv[1:]]), "machine": machine(),
                 **figures})


def write(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2, default=str))
