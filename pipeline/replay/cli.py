"""``jobstream replay status`` and ``jobstream replay timers`` (``replay views`` is the
API's, in connectors/cli.py), each with a progress bar on standard error."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobstream._pipeline.cli_options import InstanceIdOption, StateDirOption
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.replay.status import compare, live_statuses, rebuild_statuses, write
from jobstream._pipeline.replay.stores import rebuild_stores
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, TimerProcessor


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A bar on standard error; the callback takes (done, total)."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task(label, total=None)
        yield lambda done, total: progress.update(task, completed=done, total=max(total, done))


def replay_status(
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Compare with jobs.status and write nothing."),
) -> None:  # fmt: skip
    """Fold jobs.events again from offset zero and put each job's status back on
    jobs.status where it differs or is missing (stop the status processor first)."""
    settings = load_settings()
    with progress_bar("jobs.events") as step:
        rebuilt = rebuild_statuses(settings, progress=step)
    with progress_bar("jobs.status") as step:
        live = live_statuses(settings, progress=step)
    found = compare(rebuilt, live)
    typer.echo(f"{len(rebuilt)} jobs rebuilt: {found.equal} equal, {len(found.differ)} "
               f"differ, {len(found.missing)} missing from jobs.status; {len(found.extra)} "
               "on jobs.status only (older than jobs.events' retention)", err=True)  # fmt: skip
    if not dry_run and found.to_write:
        written = write(settings, rebuilt, found.to_write)
        typer.echo(f"{written} statuses written to jobs.status", err=True)


def replay_timers(
    instance_id: str = InstanceIdOption,
    state_dir: Path = StateDirOption,
) -> None:
    """Rebuild a timer instance's stores from jobs.timers.changelog, from offset zero
    (stop that instance first: its files are locked while it runs)."""
    settings = load_settings()
    options = TIMER_OPTIONS.evolve(instance_id=instance_id, state_dir=state_dir)
    with progress_bar("jobs.timers.changelog") as step:
        applied = rebuild_stores(settings, TimerProcessor(settings), options, step)
    typer.echo(f"timer stores rebuilt in {state_dir}: {applied} changelog records applied",
               err=True)  # fmt: skip
