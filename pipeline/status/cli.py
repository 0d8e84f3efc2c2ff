"""``jobstream status-processor``: run the status processor until SIGTERM or SIGINT.

Also runnable on its own as ``python -m pipeline.status.cli`` (same options).
"""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline import metrics
from pipeline.config import load_settings
from pipeline.signals import stop_on_signals
from pipeline.status.runner import StatusOptions, StatusRunner

DEFAULT_STATE_DIR = StatusOptions.state_dir


def status_processor(
    instance_id: str = typer.Option("0", "--instance-id", envvar="JOBSTREAM_INSTANCE_ID",
                                    help="Stable id of this process among the status processors."),
    state_dir: Path = typer.Option(DEFAULT_STATE_DIR, "--state-dir",
                                   envvar="JOBSTREAM_STATE_DIR", help="Where RocksDB stores live."),
    lease_s: float = typer.Option(30.0, "--lease-s", min=0.1,
                                  help="A RUNNING job without a heartbeat this long is lost."),
    metrics_port: int = typer.Option(0, "--metrics-port", envvar="JOBSTREAM_METRICS_PORT",
                                     help="Serve /metrics and /healthz on this port (0: off)."),
) -> None:  # fmt: skip
    """Run a status processor: fold jobs.events into jobs.status and hold the leases."""
    settings = load_settings()
    stop = stop_on_signals()
    if metrics_port:
        metrics.serve(metrics_port)
    options = StatusOptions(instance_id=instance_id, state_dir=state_dir,
                            lease_ms=max(1, round(lease_s * 1000)))  # fmt: skip
    StatusRunner(settings, options).run(stop)

