"""``jobstream retry-router``: run a retry router until SIGTERM or SIGINT."""

from __future__ import annotations

from jobstream._pipeline.cli_options import InstanceIdOption, MetricsPortOption, run_processor
from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.retry import RetryDefaults
from jobstream._pipeline.retry.processor import ROUTER_OPTIONS, router_runner
from jobstream._pipeline.runtime.runner import Runner


def retry_router(
    instance_id: str = InstanceIdOption,
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Route failed attempts: retry them after a backoff, or dead-letter them.

    Per-type default policies come from JOBSTREAM_RETRY_DEFAULTS (JSON), e.g.
    {"image.render": {"max_attempts": 5}, "*": {"jitter": 0.2}}; "*" is every type.
    """
    options = ROUTER_OPTIONS.evolve(instance_id=instance_id)

    def build(settings: Settings) -> Runner[None]:
        defaults = RetryDefaults.from_overrides(settings.retry_defaults)
        return router_runner(settings, options, defaults)

    run_processor(build, metrics_port)
