"""The runs a worker holds, and the executions it has already answered.

Two views of the runs, because a timed-out sync handler outlives its report: ``slots``
holds every run that occupies capacity (until its thread returns), ``active`` only the
runs whose outcome is still to come (the ones that get heartbeats, that drain waits for,
and that redeliveries join). Finished execution ids are remembered (bounded, oldest
forgotten first) so that a record redelivered after its outcome was produced is not run
again.

A run whose cancel arrived (pipeline/worker/cancels.py) keeps its request in ``cancel``:
whatever way it then ends, it is reported CANCELLED.

A run claimed ahead of its due instant (a record fired ahead, ``JOBSTREAM_FIRE_LEAD``)
waits in ``ahead`` instead, holding no slot, until its launch comes near (:meth:`seat`);
one that ends without a launch (cancelled, given up) never takes one.

Neither the heartbeats nor the deadlines scan every run: a worker may hold thousands
claimed ahead. Heartbeats come from a heap by instant (:meth:`beat_at`,
:meth:`beats_due`), deadlines and progress reports from the runs in slots only
(:meth:`seated`), at most the concurrency.

A run in ``slots`` or ``ahead`` also holds a slot of its partition index in its lane's
:class:`~jobstream._pipeline.worker.slots.PartitionSlots` (a type with a fleet-wide limit): taken
when it is added, given back when its handler returns (or it ends unlaunched). A run of a
job with a concurrency key holds its key among the worker's
:class:`~jobstream._pipeline.worker.keyed.KeyedRuns` for the same span.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.records import Checkpoint, ExecutionRequested
from jobstream._pipeline.worker.app import Handler
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.executor import RunHandle
from jobstream._pipeline.worker.keyed import concurrency_key
from jobstream._pipeline.worker.lane import Lane
from jobstream._pipeline.worker.launched import LaunchStamp
from jobstream._pipeline.worker.lease import RunLease
from jobstream._pipeline.worker.offsets import OffsetRef
from jobstream._pipeline.worker.progress import ProgressReporter
from jobstream._pipeline.worker.slots import count_down
from jobstream._pipeline.worker.spawns import SpawnBox

_STALE_BEATS = 1000
"""Heartbeat entries allowed beyond twice the runs held before the heap is rebuilt."""
RECENT_EXECUTIONS = 10_000
"""Finished execution ids remembered to recognise redeliveries (about a megabyte)."""


@dataclass(eq=False, slots=True)
class RunningJob:
    token: int
    lane: Lane
    execution: ExecutionRequested
    ref: OffsetRef
    """The record of this run (claimed: its offset is committed when the run starts)."""
    handler: Handler
    timeout_s: float
    started: tuple[bytes, bytes]
    """Its STARTED record (key, value), committed with its claim."""
    deadline: float
    """Monotonic instant of the timeout (infinite until the handler is launched)."""
    next_beat: float
    """Monotonic instant of its next HEARTBEAT (infinite: none yet). Set through
    :meth:`InFlight.beat_at` only, which also files it: set directly, no beat comes."""
    async_run: RunHandle | None = None
    """Cancels an async run."""
    reported: bool = False
    signal: threading.Event | None = None
    """Its context's ``cancel_signal``: set, a sync handler sees ``ctx.cancelled``."""
    cancel: CancelRequest | None = None
    """The cancel that reached it, if one has."""
    cancel_deadline: float = float("inf")
    """Monotonic instant it is reported CANCELLED at, should the handler ignore the cancel."""
    progress: ProgressReporter = field(default_factory=ProgressReporter)
    """Its handler's latest progress report (and checkpoint), waiting for its HEARTBEAT."""
    checkpoint: Checkpoint | None = None
    """The last checkpoint it sent: its failure carries it to the next attempt."""
    log: RunLog | None = None
    """Its log lines, from its launch until they go to jobs.logs with its outcome."""
    spawns: SpawnBox = field(default_factory=SpawnBox)
    """The children its handler spawned, waiting for the lane's next transaction."""
    lease: RunLease | None = None
    """Its lease as this worker sees it (pipeline/worker/lease.py), shared with its context."""
    launched: LaunchStamp = field(default_factory=LaunchStamp)
    """When its handler really began (marked by the executor): on its HEARTBEATs and its end."""

    @property
    def execution_id(self) -> str:
        return self.execution.execution_id

    @property
    def partition(self) -> int:
        """The partition index of the record that started it: the one whose slot it holds."""
        return self.ref.partition


class InFlight:
    def __init__(self, recent_limit: int = RECENT_EXECUTIONS) -> None:
        self.slots: dict[int, RunningJob] = {}
        self.ahead: dict[int, RunningJob] = {}
        """Runs claimed ahead of their instant, waiting for it without a slot."""
        self.active: dict[str, RunningJob] = {}
        self._job_ids: dict[str, int] = {}
        """Active runs per job id (for the overlap policy); a plain dict, as Counter's
        arithmetic is Python code run twice per job."""
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._recent_limit = recent_limit
        self._beats: list[tuple[float, int, str]] = []
        """(instant, token, execution id) of each heartbeat to send; an entry whose run has
        been given another instant since, or has been reported, is passed over. Ids, not
        runs: an entry outlives its run by up to a heartbeat interval, and must not keep
        the run's records in memory."""

    def add(self, job: RunningJob, *, ahead: bool = False) -> None:
        """A run started: it takes a slot now, or (``ahead``) once :meth:`seat` gives it one."""
        (self.ahead if ahead else self.slots)[job.token] = job
        job.lane.slots.take(job.partition)
        key = concurrency_key(job.execution)
        if key is not None:
            job.lane.keys.runs.take(key, job.execution.job_id)
            job.lane.key_runs += 1
        self.active[job.execution_id] = job
        job_id = job.execution.job_id
        self._job_ids[job_id] = self._job_ids.get(job_id, 0) + 1

    def seat(self, job: RunningJob) -> None:
        """A run claimed ahead takes its slot: its launch has come."""
        del self.ahead[job.token]
        self.slots[job.token] = job

    def release(self, token: int) -> RunningJob | None:
        """The run behind ``token`` has returned, or ended unlaunched: free its slot."""
        job = self.slots.pop(token, None) or self.ahead.pop(token, None)
        if job is not None:
            job.lane.slots.give(job.partition)
            key = concurrency_key(job.execution)
            if key is not None:
                job.lane.key_runs -= 1
                job.lane.keys.runs.give(key, job.execution.job_id)
        return job

    def reported(self, job: RunningJob) -> None:
        """Its outcome is decided; it may still hold a slot."""
        job.reported = True
        self.active.pop(job.execution_id, None)
        count_down(self._job_ids, job.execution.job_id)

    def remember(self, execution_id: str) -> None:
        self._recent[execution_id] = None
        if len(self._recent) > self._recent_limit:
            self._recent.popitem(last=False)

    def answered(self, execution_id: str) -> bool:
        return execution_id in self._recent

    def job_running(self, job_id: str) -> bool:
        return job_id in self._job_ids

    def of_job(self, job_id: str) -> list[RunningJob]:
        """The runs of ``job_id`` whose outcome is still to come."""
        if job_id not in self._job_ids:
            return []
        return [job for job in self.active.values() if job.execution.job_id == job_id]

    def seated(self) -> list[RunningJob]:
        """The runs holding a slot whose outcome is still to come: launched, or to be once
        their claim commits (a run claimed ahead holds none until its launch)."""
        return [job for job in self.slots.values() if not job.reported]

    def overdue(self, now: float) -> list[RunningJob]:
        """The runs past their deadline whose outcome is still to come."""
        return [job for job in self.seated() if now >= job.deadline]

    def beat_at(self, job: RunningJob, at: float) -> None:
        """The run's next HEARTBEAT is due at monotonic ``at`` (infinite: none yet)."""
        job.next_beat = at
        if math.isinf(at):
            return
        if len(self._beats) > 2 * len(self.active) + _STALE_BEATS:  # mostly ended runs'
            self._beats = [(run.next_beat, run.token, run.execution_id)
                           for run in self.active.values() if not math.isinf(run.next_beat)]
            heapq.heapify(self._beats)  # it holds ``job``'s own entry from here on
        else:
            heapq.heappush(self._beats, (at, job.token, job.execution_id))

    def beats_due(self, now: float) -> list[RunningJob]:
        """The runs whose HEARTBEAT is due at monotonic ``now``; each is due again only
        once :meth:`beat_at` gives it its next instant."""
        heap, due = self._beats, list[RunningJob]()
        while heap and heap[0][0] <= now:
            at, token, execution_id = heapq.heappop(heap)
            job = self.active.get(execution_id)
            # Two entries of one instant (filed twice at one clock reading) pop together.
            if (job is not None and job.token == token and job.next_beat == at
                    and (not due or due[-1] is not job)):  # fmt: skip
                due.append(job)
        return due

    def give_up(self) -> list[RunningJob]:
        """The runs still active at shutdown, given up: async ones are cancelled (their
        ends report nothing), and none is active any more."""
        given_up = list(self.active.values())
        for job in given_up:
            if job.async_run is not None:
                job.async_run.cancel()
        self.active.clear()
        self._job_ids.clear()
        return given_up
