"""What both sides of the peer agree on: task names, the queue, and the worker's settings.

Free of Celery imports, so that the runner can be imported before ensure_installed()
has installed Celery.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

NOOP = "bench.noop"
SLEEP10 = "bench.sleep10"
TASKS = {"noop": NOOP, "sleep10": SLEEP10}
"""The ``handler`` choices and the Celery task each one runs (as in ops/bench/app.py)."""
QUEUE = "jobstream-peer"


class PeerSettings(BaseSettings):
    """What the worker process is told by the runner, through its environment."""

    model_config = SettingsConfigDict(env_prefix="JOBSTREAM_PEER_", frozen=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    """The run's redis-server."""
    journal_dir: Path = Path("peer-journal")
    """Where the tasks write their start and end records (ops/bench/peer/journal.py)."""
    visibility_timeout_s: float = 3600.0
    """Longer than the run: see ops/bench/peer/app.py."""

    def env(self) -> dict[str, str]:
        """These settings as the environment variables that load them."""
        return {
            "JOBSTREAM_PEER_REDIS_URL": self.redis_url,
            "JOBSTREAM_PEER_JOURNAL_DIR": str(self.journal_dir),
            "JOBSTREAM_PEER_VISIBILITY_TIMEOUT_S": str(self.visibility_timeout_s),
        }
