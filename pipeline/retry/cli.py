"""``jobstream retry-router``: run a retry router until SIGTERM or SIGINT."""

from __future__ import annotations

import typer

from pipeline import metrics
from pipeline.config import load_settings
from pipeline.retry.policy import RetryDefaults
from pipeline.retry.runner import RetryRunner, RouterOptions
from pipeline.signals import stop_on_signals


def retry_router(
    instance_id: str = typer.Option("0", "--instance-id", envvar="JOBSTREAM_INSTANCE_ID",
                                    help="Stable id of this process among the retry routers."),
    metrics_port: int = typer.Option(0, "--metrics-port", envvar="JOBSTREAM_METRICS_PORT",
                                     help="Serve /metrics and /healthz on this port (0: off)."),
) -> None:  # fmt: skip
    """Route failed attempts: retry them after a backoff, or dead-letter them.

    Per-type default policies come from JOBSTREAM_RETRY_DEFAULTS (JSON), e.g.
    {"image.render": {"max_attempts": 5}, "*": {"jitter": 0.2}}; "*" is every type.
    """
    settings = load_settings()
    defaults = RetryDefaults.from_overrides(settings.retry_defaults)
    if metrics_port:
        metrics.serve(metrics_port)
    stop = stop_on_signals()
    RetryRunner(settings, RouterOptions(instance_id=instance_id), defaults).run(stop)
