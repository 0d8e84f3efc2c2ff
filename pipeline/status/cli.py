"""``jobstream status-processor``: run the status processor until SIGTERM or SIGINT."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.cli_options import (
    InstanceIdOption,
    MetricsPortOption,
    StateDirOption,
    run_processor,
)
from jobstream._pipeline.durations import duration_option, format_duration
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner

LeaseOption = duration_option(
    "30s", "--lease", minimum="100ms", envvar="JOBSTREAM_LEASE",
    help="A RUNNING job without a heartbeat this long is lost (give the workers the same).",
)  # fmt: skip
CommitIntervalOption = duration_option(
    format_duration(STATUS_OPTIONS.commit_interval_ms), "--commit-interval",
    help="How long one transaction takes events in: fewer transactions for the broker, "
    "statuses later by up to this much (0s: one per loop iteration).",
)  # fmt: skip


def status_processor(
    instance_id: str = InstanceIdOption,
    state_dir: Path = StateDirOption,
    lease_ms: int = LeaseOption,
    commit_interval_ms: int = CommitIntervalOption,
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Run a status processor: fold jobs.events into jobs.status and hold the leases."""
    options = STATUS_OPTIONS.evolve(instance_id=instance_id, state_dir=state_dir,
                                    commit_interval_ms=commit_interval_ms)  # fmt: skip
    policy = StatusPolicy(lease_ms=lease_ms)
    run_processor(lambda settings: status_runner(settings, options, policy), metrics_port)
