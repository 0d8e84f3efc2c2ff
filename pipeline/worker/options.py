"""The knobs of a worker process, and the counters it keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.schedule import DEFAULT_INTERVAL_S, DEFAULT_MAX_PENDING
from jobstream._pipeline.worker.heartbeat import default_worker_id
from jobstream._pipeline.worker.lease import LEASE_S
from jobstream._pipeline.worker.progress import DEFAULT_INTERVAL_S as PROGRESS_INTERVAL_S

MIN_PREFETCH = 1000
"""Records a tier buffers at least. A fetch then brings hundreds of records, not a few,
and a busy tier is paused (which makes librdkafka drop what it had fetched ahead, to
fetch it again at the resume) once per 500 records started, not every few. Buffered
records are not running, so they cost memory only (bounded by pauses.BUFFER_BYTES); a
rebalance drops them uncommitted and their partition's next owner fetches them again."""

CLAIM_AHEAD_S = 0.2
"""How long before its due instant a run fired ahead is claimed, by default
(``--claim-ahead``), while the worker holds no burst (:data:`BURST_HELD`)."""
BURST_HELD = 2000
"""Records held before their instant and runs claimed before it, over every type of a
worker, that make a burst (``--claim-on-arrival-above``): then each lane claims what it
holds as it arrives, up to
the timers' longest lead (``JOBSTREAM_FIRE_LEAD_MOST``) ahead, so that at the instant the
worker only launches runs. A steady load keeps fewer (about a second's worth of records,
fired a second ahead) and is claimed ``claim_ahead_s`` before each instant, so a worker
that dies takes only those with it."""
CLAIMED_AHEAD_MOST = 20_000
"""Runs claimed ahead and waiting for their instant, at most, by default
(``--claimed-ahead-most``): a burst of 20,000 held whole, about 3 KB each
(docs/lifecycle.md, "Bursts")."""

Isolation = Literal["thread", "process"]
ISOLATIONS: tuple[Isolation, ...] = ("thread", "process")


@dataclass(frozen=True)
class WorkerOptions:
    worker_id: str = field(default_factory=default_worker_id)
    """Unique among live workers: it names the transactional ids, and a second process with
    the same id fences the first."""
    static_member: bool = False
    """Join the type's group as a static member named by the worker id (set when the id is
    given, not made up): restarted under the same id, the worker takes its partitions back
    at once instead of after the dead member's session (6 s); stopped for good, its
    partitions go to the others after that session rather than at once."""
    job_types: tuple[str, ...] = ()
    """Types to serve; empty serves every type the app registers."""
    pool: str | None = None
    """Serve only the jobs that require this pool (``--pool gpu``); None: only those that
    require none."""
    concurrency: int = 8
    """Runs holding a slot at once, across the types served."""
    isolation: Isolation = "thread"
    """Where handlers run: ``thread``, sync ones on the worker's threads and async ones on
    its event loop (pipeline/worker/executor.py); ``process``, each run in one of up to
    ``concurrency`` child processes kept for the worker's life, which a crash or a
    timeout kills alone (pipeline/worker/processes.py). docs/workers.md says which to
    pick when."""
    prefetch: int | None = None
    """Records buffered per tier and type; None means ``concurrency``, but at least
    :data:`MIN_PREFETCH`. Each tier keeps its own buffer so the priority policy always sees
    every tier's next record; a deeper buffer lets one fetch bring many records."""
    commit_interval_s: float = DEFAULT_INTERVAL_S
    """Least time between two transactions of a type while outcomes keep coming: each
    transaction carries every outcome decided since the previous one
    (pipeline/runtime/schedule.py)."""
    commit_max_outcomes: int = DEFAULT_MAX_PENDING
    """Outcomes waiting that make a transaction due before the interval has passed."""
    heartbeat_s: float = 10.0
    """HEARTBEAT interval of a running job (the status processor's lease is 30 s)."""
    lease_s: float = LEASE_S
    """The status processor's lease (``JOBSTREAM_LEASE``): a run none of whose HEARTBEATs
    has reached the brokers for 3/4 of it stops itself (pipeline/worker/lease.py)."""
    progress_interval_s: float = PROGRESS_INTERVAL_S
    """Least time between two progress reports of one run on jobs.events (``ctx.progress``):
    the latest report waits for it, and the last one goes before the outcome anyway."""
    worker_heartbeat_s: float = 5.0
    """WorkerHeartbeat interval on jobs.workers."""
    drain_timeout_s: float = 30.0
    """After stop, how long running jobs may finish before they are given up (reported
    FAILED, ``WorkerStopped``, and retried by the job's policy)."""
    claim_ahead_s: float = CLAIM_AHEAD_S
    """A record fired ahead of its due instant (``JOBSTREAM_FIRE_LEAD``) is claimed this
    long before it, with the others due within as much again after it: one claim's
    transaction for all of them, about one per ``claim_ahead_s`` (pipeline/worker/early.py).
    Its STARTED tells the due instant. A run claimed so holds no slot until
    ``launch_ahead_s`` before its instant; a type with a concurrency limit claims only
    ``launch_ahead_s`` ahead, since its claims hold the limit's slots."""
    launch_ahead_s: float = 0.02
    """A run claimed ahead takes a slot this long before its instant, when one is free, and
    its handler starts on the instant (pipeline/worker/executor.py waits for it)."""
    claim_on_arrival_above: int = BURST_HELD
    """Records held and runs claimed before their instant (every lane's) from which each
    lane claims its records as they arrive (:data:`BURST_HELD`)."""
    claimed_ahead_most: int = CLAIMED_AHEAD_MOST
    """Runs claimed ahead and waiting for their instant, at most (each keeps its record and
    context in memory); records past it wait to be claimed."""
    poll_timeout_s: float = 0.02
    """Longest wait per loop iteration (for records, or for a run to end when every slot
    is taken): bounds how late a deadline, a heartbeat or a due commit is noticed."""
    async_grace_s: float = 5.0
    """How long past its deadline an async handler may ignore its cancellation before
    the loop reports TIMED_OUT without it."""
    cancel_grace_s: float = 5.0
    """How long a run may go on after its cancel reached the worker (a sync handler that
    does not check ``ctx.cancelled``, an async one that swallows ``CancelledError``)
    before the loop reports it CANCELLED without it; its slot stays taken until it
    returns."""
    stats_interval_s: float = 30.0
    revoke_timeout_s: float = 60.0
    """A type with a concurrency limit: how long its runs may take to end before its
    partitions are revoked (the whole group's rebalance waits for them). Runs still
    going then are given up uncommitted, and the limit may be exceeded while they run
    on. Stays below librdkafka's ``max.poll.interval.ms`` (300 s; ``--revoke-timeout`` takes
    at most 4 minutes), past which the group goes on without this worker
    (docs/adr/0003-concurrency-limits.md)."""


class WorkerStats(Counters):
    """Counters since start; read by tests and logged every ``stats_interval_s``. Runs
    ``started``; runs ended ``succeeded``, ``failed``, ``timed_out`` or ``cancelled``
    (:meth:`count` by the outcome's kind, records of cancelled jobs never started
    included); runs ``skipped`` because of the overlap policy; records
    ``redelivered`` (of an execution already running or answered here: not run again);
    records ``expired`` (past the job's deadline or the attempt's queue limit: not run);
    runs ``given_up`` at the stop; children ``spawned`` by handlers (``ctx.spawn``); and,
    as of the last loop, runs ``running`` and records ``buffered`` by job type."""

    def __init__(self) -> None:
        super().__init__("started", "succeeded", "failed", "timed_out", "cancelled", "skipped",
                         "redelivered", "expired", "given_up", "spawned", "running")  # fmt: skip
        self.buffered: dict[str, int] = {}
