"""The worker's decisions: which records start, when, and on which slot.

Pure: no client, no thread, no clock of its own. Each call is given the instant
(``now``: monotonic seconds, ``wall``: epoch ms) and what happened (runs that ended,
cancels that arrived); it returns the actions for the shell to carry out
(pipeline/worker/actions.py): claim these, launch that, emit this HEARTBEAT, stop that run.
The loop (pipeline/worker/loop.py) feeds it from Kafka and the executor; the test driver
(pipeline/worker/driver.py) from a test. The runs in hand are watched by
:class:`~jobstream._pipeline.worker.supervisor.RunSupervisor`.

- Capacity: at most ``concurrency`` runs hold a slot, counting a timed-out sync handler
  whose thread has not returned yet. Lanes take turns, so one busy job type cannot hold
  every slot forever.
- Every start counts: a record is claimed before its handler runs, its STARTED and its
  offset committed in one transaction of its lane (:class:`Claim`), so no run goes
  unrecorded and Kafka never hands a started record out again. A claim that fails leaves
  neither (the runs wait, and it is tried again after the lane's backoff).
- The retry of a run whose process died runs alone (pipeline/worker/quarantine.py),
  unless handlers run in child processes, where a crash takes only its own run down.
- On the instant: a record fired ahead of its due instant waits in its lane until
  ``claim_ahead_s`` before it, and is claimed with the others due within as much again,
  holding no slot: up to ``claimed_ahead_most`` such runs wait for their launch.
  ``launch_ahead_s`` before its instant, a run takes a slot (claimed runs before any
  record waiting in a buffer) and goes to the executor, which starts the handler on the
  instant. A worker behind (a run it claimed ahead waits past its instant for a slot)
  claims nothing more ahead.
- Beyond the slots: with every slot taken, a type whose runs are shorter than its
  claims' round trip has as many more due records claimed as its slots run in one round
  trip, launched as runs end, so that its slots do not idle while each claim commits.
- What a record picked becomes (a run, a join, a skip): pipeline/worker/starts.py.
- Concurrency keys: a record whose key is at its limit here is parked by its lane
  (pipeline/worker/keyed.py) and announced once, HELD on jobs.events (:class:`Emit`, the
  plain producer flushed before the next claim commits, so a HELD precedes its STARTED).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from functools import partial

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.actions import Action, Claim, Emit, Launch
from jobstream._pipeline.worker.app import WorkerApp
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.context import JobContext
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.inflight import InFlight, RunningJob
from jobstream._pipeline.worker.lane import Lane, Record
from jobstream._pipeline.worker.options import WorkerOptions, WorkerStats
from jobstream._pipeline.worker.quarantine import Quarantine, is_suspect
from jobstream._pipeline.worker.starts import RunStarts, Started
from jobstream._pipeline.worker.supervisor import RunSupervisor


class WorkerEngine:
    def __init__(self, app: WorkerApp, lanes: list[Lane], options: WorkerOptions, *,
                 serialize: Callable[[Event], bytes],
                 encode_started: Callable[[Event, bytes | None], bytes], results_topic: str,
                 processes: bool = False, max_log_lines: int, max_log_bytes: int,
                 monotonic: Callable[[], float]) -> None:  # fmt: skip
        self.lanes, self.options = lanes, options
        self._log_bounds = (max_log_lines, max_log_bytes)
        self.inflight = InFlight()
        self.stats = WorkerStats()
        self._actions: list[Action] = []
        self.runs = RunSupervisor(options, inflight=self.inflight, stats=self.stats,
                                  serialize=serialize, results_topic=results_topic,
                                  processes=processes, actions=self._actions)  # fmt: skip
        self.starts = RunStarts(app, options, runs=self.runs, encode_started=encode_started,
                                monotonic=monotonic)  # fmt: skip
        self.quarantine: Quarantine[tuple[Lane, Record]] = Quarantine()
        self._quarantines = not processes
        """A crash in a child process takes only its own run down: no suspects there."""
        self._unclaimed: list[Started] = []
        """Runs started whose claim has not committed yet: their handlers wait."""
        self._claimed_ahead: list[tuple[int, int, RunningJob, JobContext]] = []
        """Runs claimed ahead of their instant, waiting for their launch: a heap by due
        instant (then token)."""
        self._launch_ahead_ms = round(options.launch_ahead_s * 1000)
        self._rotation = 0

    # -- inputs -----------------------------------------------------------------------------

    def follow(self, requests: Iterable[CancelRequest], wall: int) -> None:
        """The cancels in force at the start, before any record starts."""
        for request in requests:
            self.runs.cancels.add(request, wall)

    def ended(self, ends: Iterable[Finished], now: float, wall: int) -> list[Action]:
        """Runs that returned: free their slots and report their outcomes."""
        for end in ends:
            self.runs.end(end, now, wall)
        return self._take()

    def tick(self, cancels: list[CancelRequest], now: float, wall: int, *,
             fetching: bool) -> list[Action]:  # fmt: skip
        """One turn of decisions: stop what the cancels cover, time out and heartbeat the
        runs, launch the runs claimed ahead whose launch has come, and (``fetching``: not
        while draining) start what fits; the claims of what started come last."""
        self.runs.cancels_arrived(cancels, now, wall)
        if cancels:
            self._cancel_parked(cancels, wall)
        self.runs.time_out(now, wall)
        self.runs.hold_leases(now, wall)
        self.runs.beat(now, wall)
        self._launch_ahead(now, wall)
        if fetching:
            self._dispatch(wall)
            self._claim_beyond_slots(wall)
            self._dispatch_ahead(wall)
        self._announce_held(wall)
        return self.claim()

    def supervise(self, now: float, wall: int) -> list[Action]:
        """Time out and heartbeat the runs, starting nothing (a revocation's wait)."""
        self.runs.time_out(now, wall)
        self.runs.hold_leases(now, wall)
        self.runs.beat(now, wall)
        return self._take()

    def claim(self) -> list[Action]:
        """The actions so far, and the claim of the runs started, if any."""
        if self._unclaimed:
            lanes = dict.fromkeys(job.lane for job, _ in self._unclaimed)
            self._actions.append(Claim(tuple(lanes)))
        return self._take()

    def claimed(self, now: float, wall: int) -> list[Action]:
        """After :class:`Claim`: launch the runs whose STARTED has left with a committed
        transaction (this one, or a revocation's). A run whose STARTED is still waiting
        waits with it, for the lane's next try; unless its partition was revoked or lost
        meanwhile: then it is dropped with its STARTED, and the partition's next owner runs
        its record."""
        waiting = []
        for job, ctx in self._unclaimed:
            if job.lane.tx.holds_pending(job.started):
                if job.lane.holds(job.ref):
                    waiting.append((job, ctx))
                else:
                    job.lane.tx.drop_pending(job.started)
                    self._forget(job)
                continue
            if job.cancel is not None:  # cancelled while its claim waited: never launched
                if not job.reported:
                    self.runs.report(job, self.runs.cancelled(job.execution, job.cancel, wall),
                                     now, wall)  # fmt: skip
                self.inflight.release(job.token)
                continue
            if job.token in self.inflight.ahead:  # its launch is still to come
                self.inflight.beat_at(job, now + self.options.heartbeat_s)
                heapq.heappush(self._claimed_ahead,
                               (job.execution.scheduled_at_ms, job.token, job, ctx))  # fmt: skip
                continue
            self._launch(job, ctx, now, wall)
        self._unclaimed = waiting
        return self._take()

    def give_up(self, now: float, wall: int) -> list[Action]:
        """At the stop: the runs never launched are dropped, those still going reported."""
        self._unclaimed.clear()
        self._claimed_ahead.clear()
        self.runs.give_up(now, wall)
        return self._take()

    # -- what the shell waits for -------------------------------------------------------

    def slot_free(self) -> bool:
        return len(self.inflight.slots) < self.options.concurrency

    def waits(self, fetching: bool, wall: int) -> tuple[bool, float]:
        """Whether to wait for a run to end rather than for records, and for how long.

        With every slot taken (or while draining) no record could start, so the wait is
        for a run to end; so it is when the only records buffered wait for a slot of their
        type's concurrency limit, or while a suspect waits or runs alone. With records
        ready to start, there is no wait at all (0 s); otherwise at most ``poll_timeout_s``,
        less if a record held before its time is due to be claimed sooner, or a run
        claimed ahead to take a free slot."""
        ready = any(lane.has_buffered for lane in self.lanes) or self._may_claim_ahead()
        for_slot = not ready and any(lane.waits_for_slot for lane in self.lanes)
        for_end = (not fetching or for_slot or not self.slot_free()
                   or self.quarantine.blocks(self.inflight.active))  # fmt: skip
        if ready and not for_end:
            return False, 0.0
        wait_s = self.options.poll_timeout_s
        soonest = min((ms for lane in self.lanes if (ms := lane.next_release_ms()) is not None),
                      default=None)  # fmt: skip
        if self._claimed_ahead and self.slot_free():
            launch = self._claimed_ahead[0][0] - self._launch_ahead_ms  # else: a run's end
            soonest = launch if soonest is None else min(soonest, launch)
        if soonest is not None:
            wait_s = min(wait_s, max(0.0, (soonest - wall) / 1000))
        return for_end, wait_s

    def _may_claim_ahead(self) -> bool:
        """Whether records wait to be claimed ahead and there is room for them."""
        return (len(self.inflight.ahead) < self.options.claimed_ahead_most
                and any(lane.ahead for lane in self.lanes))  # fmt: skip

    # -- starting runs ------------------------------------------------------------------

    def _take(self) -> list[Action]:
        actions = self._actions[:]
        self._actions.clear()
        return actions

    def _dispatch(self, wall: int) -> None:
        """Start what fits: each start's STARTED joins its lane's next transaction, which
        the :class:`Claim` commits before the handlers run."""
        running = self.inflight.active
        while self.slot_free() and not self.quarantine.blocks(running):
            held = self.quarantine.take_held(running)
            if held is not None and not held[0].readmit(held[1]):
                continue  # its key filled up while it waited: parked first in line
            picked = held or self._next_record()
            if picked is None:
                break
            lane, record = picked
            if not lane.holds(record.ref):
                continue  # held back while its partition went to another worker
            suspect = self._quarantines and is_suspect(record.execution)
            if suspect and running:
                self.quarantine.hold(picked)
                break
            started = self.starts.start(lane, record, wall)
            if started is not None:
                self._unclaimed.append(started)
                if suspect:
                    self.quarantine.alone = started[0].execution_id

    def _cancel_parked(self, cancels: list[CancelRequest], wall: int) -> None:
        """Records parked behind their key whose job a cancel covers end CANCELLED now,
        rather than when a run of their key ends."""
        def covered(record: Record) -> bool:
            execution = record.execution
            return any(c.job_id == execution.job_id and c.covers(execution) for c in cancels)

        for lane in self.lanes:
            if lane.keys:
                for record in lane.keys.take(covered):
                    self.runs.cancelled_before_start(lane, record, wall)

    def _announce_held(self, wall: int) -> None:
        """A HELD for each record parked since the last turn."""
        for lane in self.lanes:
            if not lane.keys.held:
                continue
            for held in lane.keys.take_held():
                execution = held.record.execution
                event = outcomes.held(execution, held_by=held.key.held_by,
                                      waiting_for=held.waiting_for,
                                      worker_id=self.options.worker_id, now_ms=wall)  # fmt: skip
                self._actions.append(Emit(outcomes.event_key(execution), event))

    def _next_record(self) -> tuple[Lane, Record] | None:
        lanes = len(self.lanes)
        for i in range(lanes):
            lane = self.lanes[(self._rotation + i) % lanes]
            record = lane.pick()
            if record is not None:
                self._rotation = (self._rotation + i + 1) % lanes
                return lane, record
        return None

    def _claim_beyond_slots(self, wall: int) -> None:
        """With every slot taken, claim due records of a type whose runs are shorter than
        its claims' round trip beyond the slots: as many as its slots run in one round
        trip (at most ``claimed_ahead_most`` waiting), each launched as a run ends, before
        any record in a buffer, as runs claimed ahead are.

        A worker starts claimed runs only, and a claim waits a round trip to the broker:
        claims for the free slots alone bound a type of short runs to ``concurrency`` runs
        a round trip, its slots idle while each claim commits (on three replicating
        brokers, six or seven claims a second: docs/benchmarks.md, "Firing and
        claiming ahead"). A type with a concurrency limit is never claimed so (its claims
        hold the limit's slots)."""
        if self.slot_free() or self.quarantine.blocks(self.inflight.active):
            return
        for lane in self.lanes:
            run_s, claim_s = lane.run_s, lane.tx.commit_s
            if lane.slots.limited or run_s is None or claim_s is None or run_s >= claim_s:
                continue
            in_a_claim = math.ceil(self.options.concurrency * claim_s / max(run_s, 1e-6))
            room = min(self.options.claimed_ahead_most, in_a_claim) - len(self.inflight.ahead)
            self._claim_ahead(lane, lane.pick, room, wall)

    def _dispatch_ahead(self, wall: int) -> None:
        """Claim the records whose claim has come ahead of their instant, holding no slot,
        up to ``claimed_ahead_most`` waiting.

        A worker behind (a run it claimed ahead waits past its instant for a slot) claims
        nothing more ahead: runs claimed and not launched would only be more runs lost
        with it should it die, each then retried as a suspect. Meanwhile the records whose
        launch has come wait for a slot in their tier buffers, as records not fired ahead
        do."""
        if self.quarantine.blocks(self.inflight.active):
            return  # a suspect waits for the runs in hand, or runs alone: none claimed now
        if self._claimed_ahead and self._claimed_ahead[0][0] < wall:
            for lane in self.lanes:
                for _, record in lane.ahead.due(wall + self._launch_ahead_ms):
                    lane.wait_for_slot(record)
            return
        room = self.options.claimed_ahead_most - len(self.inflight.ahead)
        for lane in self.lanes:
            room = self._claim_ahead(lane, partial(_pop, lane), room, wall)

    def _claim_ahead(self, lane: Lane, take: Callable[[], Record | None], room: int,
                     wall: int) -> int:  # fmt: skip
        """Start records from ``take`` without a slot, up to ``room`` of them (their STARTED
        joins the lane's next transaction, as a slot's do); the room left. A suspect met
        goes to its tier buffer to wait for a slot, and ends the claims: none is claimed
        while a suspect waits or runs alone, or it would be launched beside the suspect."""
        while room > 0 and (record := take()) is not None:
            if not lane.holds(record.ref):
                continue  # its partition went to another worker
            if self._quarantines and is_suspect(record.execution):
                lane.wait_for_slot(record)
                break
            started = self.starts.start(lane, record, wall, ahead=True)
            if started is not None:
                self._unclaimed.append(started)
                room -= 1
        return room

    def _launch(self, job: RunningJob, ctx: JobContext, now: float, wall: int) -> None:
        """Launch a claimed run holding a slot; one claimed ahead starts on its instant,
        and its deadline and heartbeats count from there. One whose lease was lost while
        it waited (the worker paused) is reported FAILED and never launched."""
        if job.lease is not None and not job.lease.ok:
            self.runs.lose_lease(job, now, wall)
            self.inflight.release(job.token)
            return
        start = now + max(0, job.execution.scheduled_at_ms - wall) / 1000
        job.deadline = start + job.timeout_s
        self.inflight.beat_at(job, start + self.options.heartbeat_s)
        job.log = RunLog(*self._log_bounds)
        self._actions.append(Launch(job, ctx))

    def _launch_ahead(self, now: float, wall: int) -> None:
        """The runs claimed ahead whose launch has come take the free slots, earliest
        instant first; those that ended meanwhile (cancelled) are passed over."""
        heap, launch_by = self._claimed_ahead, wall + self._launch_ahead_ms
        while heap and heap[0][0] <= launch_by and self.slot_free():
            _, _, job, ctx = heapq.heappop(heap)
            if job.token in self.inflight.ahead:
                self.inflight.seat(job)
                self._launch(job, ctx, now, wall)

    def _forget(self, job: RunningJob) -> None:
        """A run never launched, whose record is someone else's now: no outcome."""
        if not job.reported:
            self.inflight.reported(job)
        self.inflight.release(job.token)


def _pop(lane: Lane) -> Record | None:
    return lane.ahead.pop()[1] if lane.ahead else None
