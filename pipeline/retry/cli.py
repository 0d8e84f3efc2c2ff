"""``jobstream retry-router``: run a retry router until SIGTERM or SIGINT."""

from __future__ import annotations

from pipeline import metrics
from pipeline.cli_options import InstanceIdOption, MetricsPortOption
from pipeline.config import load_settings
from pipeline.retry.policy import RetryDefaults
from pipeline.retry.runner import ROUTER_OPTIONS, router_runner
from pipeline.signals import stop_on_signals


def retry_router(
    instance_id: str = InstanceIdOption,
    metrics_port: int = MetricsPortOption,
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
    router_runner(settings, ROUTER_OPTIONS.evolve(instance_id=instance_id), defaults).run(stop)
