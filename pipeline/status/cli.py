"""``jobstream status-processor``: run the status processor until SIGTERM or SIGINT.

Also runnable on its own as ``python -m pipeline.status.cli`` (same options).
"""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline import metrics
from pipeline.cli_options import InstanceIdOption, MetricsPortOption, StateDirOption
from pipeline.config import load_settings
from pipeline.signals import stop_on_signals
from pipeline.status.processor import StatusPolicy
from pipeline.status.runner import STATUS_OPTIONS, status_runner


def status_processor(
    instance_id: str = InstanceIdOption,
    state_dir: Path = StateDirOption,
    lease_s: float = typer.Option(30.0, "--lease-s", min=0.1,
                                  help="A RUNNING job without a heartbeat this long is lost."),
    commit_interval_ms: int = typer.Option(
        STATUS_OPTIONS.commit_interval_ms, "--commit-interval-ms", min=0,
        help="How long one transaction takes events in: fewer transactions for the broker, "
             "statuses later by up to this much (0: one per loop iteration)."),
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Run a status processor: fold jobs.events into jobs.status and hold the leases."""
    settings = load_settings()
    stop = stop_on_signals()
    if metrics_port:
        metrics.serve(metrics_port)
    options = STATUS_OPTIONS.evolve(instance_id=instance_id, state_dir=state_dir,
                                    commit_interval_ms=commit_interval_ms)  # fmt: skip
    policy = StatusPolicy(lease_ms=max(1, round(lease_s * 1000)))
    status_runner(settings, options, policy).run(stop)
