"""What the benchmark commands share on screen: the progress bar, result rows, the load."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

console = Console(width=None if sys.stdout.isatty() else 160)
"""Wide enough for the tables when the output is a file or a pipe (rich assumes 80 then,
and wraps every cell)."""


@dataclass
class Row:
    metric: str
    value: str
    target: str = ""
    ok: bool | None = None


def progress_bar() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[info]}"),
                    console=console)  # fmt: skip


def load_average() -> list[float]:
    """1, 5 and 15-minute load: other work on the machine moves every number measured."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def write_results(out: Path | None, report: dict[str, Any]) -> None:
    """Write a run's results to ``out`` as JSON (nowhere when None) and say where."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2, default=str))
        console.print(f"results: {out}")
