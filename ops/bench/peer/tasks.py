"""The peer's two tasks, on the app the worker process loads (``celery -A`` this module).

Each task gets ``(job_id, due_ms)`` and writes a start record as its body begins
and an end record as it returns (ops/bench/peer/journal.py): start lateness is measured
where jobstream measures it, when the handler starts, on the worker's clock.

- ``bench.noop`` does nothing: what is measured is the scheduler, not the job.
- ``bench.sleep10`` sleeps 10 ms, holding its pool slot (``time.sleep``; a Celery task is
  synchronous), like a job that waits on another service. Run it with a pool of
  threads to overlap the waits, as jobstream's worker overlaps its async handler's.

When a worker node is ready to consume, it writes ``ready-<pid>`` in the journal folder: the
runner starts submitting only then, so start-up is not counted as lateness.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from celery.signals import worker_ready

from jobstream._ops.bench.peer.app import make_app
from jobstream._ops.bench.peer.journal import END, START, Journal
from jobstream._ops.bench.peer.settings import NOOP, SLEEP10, PeerSettings

log = logging.getLogger(__name__)

settings = PeerSettings()
app = make_app(settings)
journal = Journal(settings.journal_dir)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@app.task(name=NOOP)
def noop(job_id: int, due_ms: int) -> None:
    journal.write(START, job_id, due_ms, _now_ms())
    journal.write(END, job_id, due_ms, _now_ms())


@app.task(name=SLEEP10)
def sleep10(job_id: int, due_ms: int) -> None:
    journal.write(START, job_id, due_ms, _now_ms())
    time.sleep(0.01)
    journal.write(END, job_id, due_ms, _now_ms())


@worker_ready.connect
def _announce_ready(**_: Any) -> None:
    settings.journal_dir.mkdir(parents=True, exist_ok=True)
    (settings.journal_dir / f"ready-{os.getpid()}").write_text(str(_now_ms()))
    log.warning("peer worker ready: redis %s, journal %s", settings.redis_url,
                settings.journal_dir)  # fmt: skip
