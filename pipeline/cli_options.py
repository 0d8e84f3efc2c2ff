"""Command-line options shared by the long-running processes, defined once, and how a
processor's command runs it."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import typer

from jobstream._pipeline import metrics
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.kafka.clock_watch import watch_clock
from jobstream._pipeline.signals import stop_on_signals

if TYPE_CHECKING:
    from jobstream._pipeline.runtime.runner import Runner

T = TypeVar("T")
R = TypeVar("R")

InstanceIdOption = typer.Option(
    "0", "--instance-id", envvar="JOBSTREAM_INSTANCE_ID",
    help="Stable id of this process among its component's processes; it names the "
    "transactional id and the group member, so keep it with its state directory.",
)  # fmt: skip
StateDirOption = typer.Option(
    Path(".jobstream/state"), "--state-dir", envvar="JOBSTREAM_STATE_DIR",
    help="Where RocksDB stores live.",
)  # fmt: skip
JsonLinesOption = typer.Option(False, "--json", help="One JSON object per line.")


def echo_each(items: Iterable[T], as_json: bool, *, text: Callable[[T], str],
              fields: Callable[[T], Mapping[str, Any]]) -> None:  # fmt: skip
    """A listing's lines: each item's ``text``, or with ``as_json`` its ``fields`` as one
    JSON object per line."""
    for item in items:
        typer.echo(orjson.dumps(fields(item)) if as_json else text(item))


def option_group(
    parameter: str, options: Mapping[str, tuple[Any, Any]], gather: Callable[..., Any],
) -> Callable[[Callable[..., R]], Callable[..., R]]:  # fmt: skip
    """Options several commands take, declared once: in the command's signature as Typer
    reads it, its ``parameter`` gives way to ``options`` (parameter name -> (annotation,
    ``typer.Option``)), in their order, and the command receives ``gather(**values)`` of
    them in its place. Typer has no option groups; this keeps each option's flag, help and
    place in ``--help`` what a parameter written out in every command would give."""

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command)
        kept: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != parameter:
                kept.append(param)
                continue
            kept.extend(inspect.Parameter(name, param.kind, default=option, annotation=annotation)
                        for name, (annotation, option) in options.items())  # fmt: skip

        @functools.wraps(command)
        def run(**values: Any) -> R:
            group = {name: values.pop(name) for name in options}
            return command(**values, **{parameter: gather(**group)})

        run.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
        return run

    return decorate


MetricsPortOption = typer.Option(
    0, "--metrics-port", envvar="JOBSTREAM_METRICS_PORT",
    help="Serve /metrics and /healthz on this port (0: off).",
)  # fmt: skip


def take_niceness(settings: Settings) -> None:
    """Lower this process's CPU priority to ``settings.nice``; never raise it (only root
    may), so a process started nicer stays so."""
    if settings.nice > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, settings.nice)


def run_processor(build: Callable[[Settings], Runner[Any]], metrics_port: int) -> None:
    """Run the processor ``build`` makes from the process's settings until SIGTERM or
    SIGINT, serving /metrics on ``metrics_port`` (0: off)."""
    settings = load_settings()
    take_niceness(settings)
    stop = stop_on_signals()
    if metrics_port:
        metrics.serve(metrics_port, settings.metrics_host)
    runner = build(settings)
    watch = watch_clock(settings, runner.name)
    try:
        runner.run(stop)
    finally:
        watch.stop()
