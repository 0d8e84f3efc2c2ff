"""What the benchmark commands share on screen: the progress bar, result rows, the load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

console = Console()


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
