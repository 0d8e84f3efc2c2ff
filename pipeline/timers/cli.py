"""``jobstream timers``: run a timer processor until SIGTERM or SIGINT."""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline import metrics
from pipeline.config import load_settings
from pipeline.signals import stop_on_signals
from pipeline.timers.runner import TimerOptions, TimerRunner

DEFAULT_STATE_DIR = TimerOptions.state_dir


def timers(
    instance_id: str = typer.Option("0", "--instance-id", envvar="JOBSTREAM_INSTANCE_ID",
                                    help="Stable id of this process among the timer processors."),
    state_dir: Path = typer.Option(DEFAULT_STATE_DIR, "--state-dir",
                                   envvar="JOBSTREAM_STATE_DIR", help="Where RocksDB stores live."),
    tick_ms: int = typer.Option(20, "--tick-ms", min=1, max=1000,
                                help="Wall-clock ticker interval."),
    metrics_port: int = typer.Option(0, "--metrics-port", envvar="JOBSTREAM_METRICS_PORT",
                                     help="Serve /metrics and /healthz on this port (0: off)."),
) -> None:  # fmt: skip
    """Run a timer processor: keep pending jobs in RocksDB and fire them on time."""
    settings = load_settings()
    stop = stop_on_signals()
    if metrics_port:
        metrics.serve(metrics_port)
    options = TimerOptions(instance_id=instance_id, state_dir=state_dir, tick_ms=tick_ms)
    TimerRunner(settings, options).run(stop)
