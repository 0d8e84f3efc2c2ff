"""The Celery app of the peer: the configuration the worker and the submitter share.

The worker process loads :mod:`jobstream._ops.bench.peer.tasks` (``celery -A``), which builds the
app from ``JOBSTREAM_PEER_*`` environment variables (ops/bench/peer/settings.py); the
submitting side builds one from the same settings, so both agree on the broker and its
transport options.

Configuration, Celery's defaults except:

- ``task_ignore_result``: no result backend; the benchmark reads its own journal.
- ``broker_transport_options.visibility_timeout``: with Redis, a message the worker has
  taken but not acknowledged goes back to the queue after this long. An eta task is
  held unacknowledged until it is due, so the timeout must exceed the run's horizon or
  a task due late in the run is delivered twice; the runner sets it from the scenario.
- ``worker_hijack_root_logger`` off and ``--loglevel WARNING`` (see worker.py): Celery
  logs two INFO lines per task (received, succeeded), which would be a cost of the
  benchmark's, not of scheduling.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from jobstream._ops.bench.peer.settings import QUEUE, PeerSettings


def make_app(settings: PeerSettings) -> Any:
    """A Celery app on the run's Redis with the configuration above (Celery is untyped)."""
    app = Celery("jobstream-peer", broker=settings.redis_url, set_as_current=False)
    app.conf.update(
        task_ignore_result=True,
        task_default_queue=QUEUE,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app
