"""What the worker's decisions ask of the shell around them.

:class:`~jobstream._pipeline.worker.engine.WorkerEngine` touches no client and no thread: it returns
these, and the loop (pipeline/worker/loop.py), or the test driver
(pipeline/worker/driver.py), carries them out in order.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker.context import JobContext
from jobstream._pipeline.worker.inflight import RunningJob
from jobstream._pipeline.worker.lane import Lane
from jobstream._pipeline.worker.lease import RunLease


@dataclass(frozen=True, slots=True)
class Launch:
    """Hand a claimed run to the executor, which starts its handler on its instant (a
    run launched ahead waits there); the handle it returns goes on ``job.async_run``."""

    job: RunningJob
    ctx: JobContext


@dataclass(frozen=True, slots=True)
class Stop:
    """Tell a launched run it is cancelled: an async one gets CancelledError, a sync one
    sees ``ctx.cancelled``, a run in a child process is terminated (SIGTERM, SIGKILL after
    the cancel grace)."""

    job: RunningJob


@dataclass(frozen=True, slots=True)
class Expire:
    """Cancel an async run at its deadline: it ends TIMED_OUT."""

    job: RunningJob


@dataclass(frozen=True, slots=True)
class Kill:
    """Kill the child process of a run reported TIMED_OUT (``isolation="process"``)."""

    token: int


@dataclass(frozen=True, slots=True)
class Emit:
    """A record for jobs.events outside the transactions: a HEARTBEAT, which confirms
    ``lease`` once the brokers have it."""

    key: bytes
    event: Event
    lease: RunLease | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """Commit the lanes' STARTED records with their offsets (:meth:`Lane.tx.claim`), then
    ask the engine which claimed runs to launch (:meth:`WorkerEngine.claimed`)."""

    lanes: tuple[Lane, ...]


Action = Launch | Stop | Expire | Kill | Emit | Claim
