"""The Celery + Redis peer of ``jobstream bench``: the same scenarios, run on Celery.

``install``: installs redis-server (apt) and celery[redis] (pip) when missing;
``redis_server``: a throw-away Redis per run; ``settings``/``app``/``tasks``: the Celery
app, its two tasks and what the worker is told; ``journal``: where tasks note their
starts and ends; ``worker``: the worker process and its pool; ``load``/``submit``: the
scenarios' due times and the submitting thread; ``procs``: memory and CPU of a process
with its children, and what the child processes share; ``tally``: the numbers; ``run``:
:func:`run.run_peer`, one scenario.

Call :func:`install.ensure_installed` before :func:`run.run_peer`; this package imports
Celery only once a run starts.
"""

from jobstream._ops.bench.peer.install import ensure_installed
from jobstream._ops.bench.peer.run import run_peer

__all__ = ["ensure_installed", "run_peer"]
