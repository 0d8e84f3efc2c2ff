"""The one options object of a processor runner, and each processor's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobstream._pipeline.errors import ConfigurationError


def processor_group(settings_prefix: str, name: str) -> str:
    """The consumer group of processor ``name`` under a topic prefix."""
    return f"{settings_prefix}jobstream.{name}"


@dataclass(frozen=True)
class RunnerOptions:
    instance_id: str = "0"
    """Stable per process: it names the transactional id and the static group member, so a
    restarted instance fences (and aborts) what its predecessor left open and takes its
    partitions back at once. Keep it with its state directory."""
    state_dir: Path = Path(".jobstream/state")
    """Where the stores of a stateful processor live (one folder per partition)."""
    poll_ms: int = 50
    """Longest wait for records per loop iteration: the resolution of punctuation."""
    batch_size: int = 2000
    """Records taken per ``consume()`` call."""
    commit_interval_ms: int = 0
    """Least time between two transactions while records keep coming (0: every
    iteration that has something to commit); see pipeline/runtime/schedule.py."""
    commit_max_records: int = 10_000
    """Records consumed plus produced that make a commit due before the interval."""
    punctuate_limit: int = 5000
    """Records punctuation may produce per iteration, shared by the partitions: it bounds
    a transaction's size and duration (well within its timeout)."""
    stats_interval_s: float = 10.0
    """How often the stats line is logged."""
    kafka_timeout_s: float = 30.0
    """The longest one blocking Kafka call (joining, fencing) may take."""
    unhealthy_after_s: float = 60.0
    """/healthz turns unhealthy when the runner has held no partition, or committed
    nothing it tried to, for this long (run no more instances than partitions)."""
    recover_timeout_s: float = 300.0
    """How long the runner keeps rebuilding its clients after a fatal Kafka error before
    the error ends the process (for its supervisor to restart it)."""

    def __post_init__(self) -> None:
        for name in ("poll_ms", "batch_size", "commit_max_records", "punctuate_limit"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.commit_interval_ms < 0:
            raise ConfigurationError(
                f"commit_interval_ms must not be negative, got {self.commit_interval_ms}"
            )
        if min(self.kafka_timeout_s, self.recover_timeout_s, self.unhealthy_after_s) <= 0:
            raise ConfigurationError(
                "kafka_timeout_s, recover_timeout_s and unhealthy_after_s must be positive"
            )
        if self.stats_interval_s <= 0:
            raise ConfigurationError(
                f"stats_interval_s must be positive, got {self.stats_interval_s}"
            )

    def store_root(self, group: str) -> Path:
        """Where this instance of a processor in consumer group ``group`` keeps its stores."""
        return self.state_dir / f"{group}.{self.instance_id}"

    def evolve(self, **changes: Any) -> RunnerOptions:
        """A copy with ``changes`` (validated again)."""
        return RunnerOptions(**{**vars(self), **changes})
