"""``jobstream timers``: run a timer processor until SIGTERM or SIGINT."""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.cli_options import (
    InstanceIdOption,
    MetricsPortOption,
    StateDirOption,
    run_processor,
)
from jobstream._pipeline.durations import duration_option, format_duration
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner

TickOption = duration_option(
    format_duration(TIMER_OPTIONS.poll_ms), "--tick", minimum="1ms", maximum="1s",
    help="Wall-clock ticker interval.",
)  # fmt: skip


def timers(
    instance_id: str = InstanceIdOption,
    state_dir: Path = StateDirOption,
    tick_ms: int = TickOption,
    metrics_port: int = MetricsPortOption,
) -> None:  # fmt: skip
    """Run a timer processor: keep pending jobs in RocksDB and fire them on time."""
    options = TIMER_OPTIONS.evolve(instance_id=instance_id, state_dir=state_dir, poll_ms=tick_ms)
    run_processor(lambda settings: timer_runner(settings, options), metrics_port)
