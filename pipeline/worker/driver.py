"""Drive a worker with no broker: records, cancels and partitions in, a clock the test
moves, and what the worker produced and committed out.

Like Kafka Streams' TopologyTestDriver, and like the processors'
:class:`~jobstream._pipeline.runtime.driver.ProcessorDriver`: the worker under test is the real
:class:`WorkerLoop` (its engine, lanes, transactions and offsets) over in-memory clients
(pipeline/worker/memory.py) and a :class:`TestClock`. The handlers are the app's own, run
on the real executor's threads and event loop; a run launched ahead of its instant starts
once the test clock reaches it (:class:`HeldLaunches`). A test waits for handlers with
:meth:`WorkerDriver.run_until`, on a condition, never on a sleep; the test clock moves
only by :meth:`WorkerDriver.advance`.

```python
driver = WorkerDriver(app, claim_ahead_s=1.0)
[execution_id] = driver.fire(execution)  # an ExecutionRequested Event, due in 5 s
driver.advance(4000)                     # claimed: its STARTED and offset committed
driver.advance(1000)                     # its instant: the handler begins
driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"))
assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"] and driver.committed() == 1
driver.shut_down()
```

Outcomes commit at each step unless a test gives ``commit_interval_s``; a transaction
takes no time unless :meth:`WorkerDriver.take_round_trips` says otherwise.
"""

from __future__ import annotations

import heapq
import threading
import zlib
from collections.abc import Callable
from typing import Any, cast

from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.app import Handler, WorkerApp
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.context import JobContext
from jobstream._pipeline.worker.executor import Finished, JobExecutor, RunHandle
from jobstream._pipeline.worker.launched import LaunchStamp
from jobstream._pipeline.worker.loop import WorkerLoop
from jobstream._pipeline.worker.memory import MemoryBroker, MemoryClients, MemoryConsumer
from jobstream._pipeline.worker.options import WorkerOptions

START_MS = 4_102_444_800_000
"""The test clock's first instant (2100-01-01), ahead of every real clock: a record fired
at the real now is due on it at once, and one due later is fired at ``clock.now_ms`` plus
as much."""


class TestClock:
    """Wall and monotonic time that move only when the test says so."""

    __test__ = False  # not a pytest class

    def __init__(self, now_ms: int = START_MS) -> None:
        self.now_ms = now_ms

    def monotonic(self) -> float:
        return self.now_ms / 1000

    def wall_ms(self) -> int:
        return self.now_ms


class _HeldRun:
    """A run launched ahead of its instant, not started yet: a cancel reaches it there."""

    def __init__(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None,
                 launched: LaunchStamp | None) -> None:  # fmt: skip
        self.token, self.handler, self.ctx, self.log = token, handler, ctx, log
        self.launched = launched
        self.cancel_requested = False
        self.run: RunHandle | None = None

    def cancel(self, *, timed_out: bool = False) -> None:
        self.cancel_requested = True
        if self.run is not None:
            self.run.cancel(timed_out=timed_out)


class HeldLaunches:
    """The executor as the driver runs it: :class:`JobExecutor` on the test clock, each
    run held until the clock reaches its instant."""

    def __init__(self, clock: TestClock, concurrency: int, on_finish: Callable[[Finished], None],
                 max_result_bytes: int) -> None:  # fmt: skip
        self._clock, self._on_finish = clock, on_finish
        self.executor = JobExecutor(concurrency, on_finish, max_result_bytes=max_result_bytes,
                                    clock=clock.wall_ms)  # fmt: skip
        self._held: list[tuple[int, int, _HeldRun]] = []
        self.started: list[int] = []
        """Tokens of the runs handed to the executor, in order."""

    def submit(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None = None,
               launched: LaunchStamp | None = None) -> RunHandle | None:  # fmt: skip
        held = _HeldRun(token, handler, ctx, log, launched)
        heapq.heappush(self._held, (ctx.scheduled_at_ms, token, held))
        self.release()
        return held if held.run is not None or handler.is_async else None

    def release(self) -> None:
        """Start the runs whose instant has come; a run cancelled before it ends so."""
        while self._held and self._held[0][0] <= self._clock.wall_ms():
            _, token, held = heapq.heappop(self._held)
            if held.cancel_requested or held.ctx.cancelled:
                self._on_finish(Finished(token, self._clock.wall_ms(), cancelled=True))
                continue
            self.started.append(token)
            held.run = self.executor.submit(token, held.handler, held.ctx, held.log,
                                            held.launched)  # fmt: skip

    def close(self, timeout_s: float = 5.0) -> None:
        self._held.clear()
        self.executor.close(timeout_s)


class WorkerDriver:
    """One worker of ``app``'s types over a :class:`MemoryBroker` (its own, or ``broker``),
    every partition of its tiers assigned to it, started (cancels read, groups joined) and
    at ``START_MS``."""

    def __init__(self, app: WorkerApp, *, settings: Settings | None = None,
                 now_ms: int = START_MS, broker: MemoryBroker | None = None,
                 **options: Any) -> None:  # fmt: skip
        options.setdefault("worker_id", "driver")
        # Outcomes commit at the next step, the clock standing still or not; a test of the
        # commit schedule gives its own interval.
        options.setdefault("commit_interval_s", 0.0)
        # A step never waits on the real clock: run_until waits for handlers instead.
        options.setdefault("poll_timeout_s", 0.0)
        self.settings = settings or load_settings()
        self.topics = Topics(self.settings)
        self.clock = TestClock(now_ms)
        self.broker = broker or MemoryBroker(self.settings.events_partitions)
        """Shared by drivers given the same one: workers of one group, one after another."""
        self.clients = MemoryClients(self.broker)
        self.serialize, self.deserialize = make_serde()
        self._decoded_logs: dict[tuple[str, int], list[Any]] = {}
        self.launches: HeldLaunches | None = None
        worker_options = WorkerOptions(**options)
        self._concurrency = worker_options.concurrency
        self.loop = WorkerLoop(self.settings, app, worker_options, clients=self.clients,
                               clock=self.clock, executor=self._executor)  # fmt: skip
        self.draining = self.closed = False
        self.loop.start()
        self.rebalance()

    def _executor(self, on_finish: Callable[[Finished], None]) -> HeldLaunches:
        self.launches = HeldLaunches(self.clock, self._concurrency, on_finish,
                                     self.settings.max_result_bytes)  # fmt: skip
        return self.launches

    # -- inputs ---------------------------------------------------------------------------

    def fire(self, *executions: Event, partition: int | None = None) -> list[str]:
        """Put ExecutionRequested records on their tiers' topics, encoded as the timers
        encode them (each on the partition of its key, or all on ``partition``); their
        execution ids."""
        for event in executions:
            spec, key = event.data.spec, outcomes.event_key(event.data)
            topic = self.topics.execution(spec.job_type, spec.priority, self.loop.options.pool)
            at = zlib.crc32(key) % self.settings.exec_partitions if partition is None else partition
            self.broker.append(topic, at, key, self.serialize(event))
        return [event.data.execution_id for event in executions]

    def cancel(self, request: CancelRequest) -> None:
        """A CancelRequested, read at the worker's next step."""
        self.clients.cancels.waiting.append(request)

    def rebalance(self, partitions: dict[str, list[int]] | None = None) -> None:
        """Assign each lane the partitions of its tiers' topics in ``partitions`` (by
        topic; none of those left out), or every one; revokes what it had and has no more."""
        for lane, consumer in zip(self.loop.lanes, self.consumers, strict=True):
            every = {topic: range(self.settings.exec_partitions) for topic in lane.tier_of}
            chosen = every if partitions is None else partitions
            consumer.rebalance([(topic, p) for topic in lane.tier_of
                                for p in chosen.get(topic, ())])  # fmt: skip

    @property
    def consumers(self) -> list[MemoryConsumer]:
        return [cast(MemoryConsumer, lane.consumer) for lane in self.loop.lanes]

    # -- time -----------------------------------------------------------------------------

    def step(self, times: int = 3) -> None:
        """Run the loop's iteration ``times``: a record fetched is claimed, then launched."""
        for _ in range(times):
            self._step()

    def _step(self) -> None:
        assert self.launches is not None
        self.launches.release()
        self.loop.step(fetching=not self.draining)

    def advance(self, ms: int, *, every_ms: int | None = None) -> None:
        """Move the clock ``ms`` on, stepping at each ``every_ms`` (or once, at the end)."""
        end = self.clock.now_ms + ms
        while self.clock.now_ms < end:
            self.clock.now_ms = min(end, self.clock.now_ms + (every_ms or ms))
            self.step()

    def take_round_trips(self, ms: int) -> None:
        """Make every transaction take ``ms`` of the test clock, as a broker's round trip."""

        def round_trip() -> None:
            self.clock.now_ms += ms

        self.broker.round_trip = round_trip

    def run_until(self, condition: Callable[[], object], *, timeout_s: float = 30,
                  what: str = "the condition") -> None:
        """Step (the clock standing still) until ``condition`` holds, waiting between
        steps for a handler to end: for a test whose handlers run on their threads."""
        done = threading.Event()
        timer = threading.Timer(timeout_s, done.set)
        timer.start()
        try:
            while not condition():
                if done.is_set():
                    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
                self._step()
                if self.loop.inflight.slots:  # a handler's end is what could change things
                    self.loop.collect(wait_s=0.05)
        finally:
            timer.cancel()

    def shut_down(self, *, wait: bool = True, timeout_s: float = 30) -> None:
        """Stop as on SIGTERM: drain, then close, giving up what still runs. The drain
        waits for the runs in hand to end (at most ``timeout_s``, real time: their
        handlers run on threads); ``wait=False`` waits for none, as when the drain
        timeout has passed."""
        self.draining = True
        abandon = threading.Event()
        if not wait:
            abandon.set()
        timer = threading.Timer(timeout_s, abandon.set)
        timer.start()
        try:
            self.loop.drain(abandon)
        finally:
            timer.cancel()
        self.loop.close()
        self.closed = True

    # -- outputs --------------------------------------------------------------------------

    def events(self, execution_id: str | None = None, kind: str | None = None) -> list[Any]:
        """The JobLifecycle records on jobs.events (committed, or plain HEARTBEATs), decoded."""
        return [r for r in self._decoded(self.topics.events)
                if (execution_id is None or r["execution_id"] == execution_id)
                and (kind is None or r["kind"] == kind)]  # fmt: skip

    def kinds(self, execution_id: str) -> list[str]:
        return [record["kind"] for record in self.events(execution_id)]

    def workers(self) -> list[Any]:
        """The worker's own records on jobs.workers, decoded."""
        return self._decoded(self.topics.workers)

    def submitted(self) -> list[Any]:
        """The JobSubmitted records on jobs.intake (committed), decoded: the children the
        handlers spawned (``ctx.spawn``)."""
        return self._decoded(self.topics.intake)

    def _decoded(self, topic: str) -> list[Any]:
        """Every record of ``topic``, partition by partition, each decoded once."""
        found = []
        for (name, partition), log in sorted(self.broker.logs.items()):
            if name != topic:
                continue
            done = self._decoded_logs.setdefault((name, partition), [])
            done.extend(self.deserialize(m.value()).data for m in log[len(done):])
            found.extend(done)
        return found

    def committed(self) -> int:
        """Records committed by the workers' groups, over every topic and partition."""
        return sum(max(tp.offset, 0) for held in self.broker.committed.values()
                   for tp in held.values())  # fmt: skip
