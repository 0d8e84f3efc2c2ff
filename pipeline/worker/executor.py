"""Runs handlers away from the consumer's thread and reports each end on a callback.

The Kafka consumer is not thread-safe, so one thread polls, dispatches and commits, and
handlers run elsewhere:

- sync handlers on a pool of daemon threads, grown on demand up to the worker's
  concurrency. Daemon, so that a process handing its in-flight jobs back at shutdown can
  exit while a handler is still running; Python cannot interrupt a thread. A sync handler
  that outlives its timeout is therefore reported TIMED_OUT by the loop at the deadline
  and keeps its thread (and its slot of capacity) until it returns; its result is
  ignored. Because every busy thread holds a slot, the pool never needs more threads
  than the concurrency.
- async handlers as tasks on one event loop thread. At its deadline the loop cancels
  a coroutine (``AsyncRun.cancel(timed_out=True)``), so its slot frees as soon as the
  cancellation completes: the loop checks deadlines on every loop iteration anyway,
  which costs less than an ``asyncio.timeout`` timer per job. Runs submitted while the
  loop has not yet picked up the previous ones join them, so a burst of starts costs the
  loop one wake-up, not one each. A coroutine that blocks the loop (CPU work, blocking
  I/O) stalls every async job of the process; such work belongs in a sync handler.

A run claimed ahead of its due instant (pipeline/worker/early.py) waits here for it, so no
handler starts before its job's ``scheduled_at_ms`` on this host's clock: a sync run is
handed to a thread on the instant by one alarm thread (pipeline/worker/alarms.py), an
async one sleeps on the event loop first. A cancel that comes meanwhile ends the run
before its handler starts. The start lateness is observed at the handler's start, and the
instant marked on the run's :class:`~jobstream._pipeline.worker.launched.LaunchStamp`.

Encoding the result happens here too (pipeline/worker/results.py), so a large result
never costs the polling thread any time; the polling thread produces it to jobs.results
with the run's SUCCEEDED. A run's log lines go to the :class:`RunLog` it was submitted
with: the handler runs with it as :data:`~jobstream._pipeline.worker.capture.CURRENT`
(pipeline/worker/capture.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.records import Event, ExecutionRequested
from jobstream._pipeline.runtime.observed import observe_launch
from jobstream._pipeline.worker import capture, outcomes
from jobstream._pipeline.worker.alarms import Alarms
from jobstream._pipeline.worker.app import Handler
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.context import JobContext
from jobstream._pipeline.worker.launched import LaunchStamp
from jobstream._pipeline.worker.outcomes import ErrorDescription, describe_error
from jobstream._pipeline.worker.results import (
    DEFAULT_MAX_RESULT_BYTES,
    EncodedResult,
    encode_result,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Finished:
    """How one run ended; exactly one of ``result``, ``error``, ``timed_out``, ``cancelled``."""

    token: int
    at_ms: int
    result: EncodedResult | None = None
    error: ErrorDescription | None = None
    timed_out: bool = False
    cancelled: bool = False

    def outcome(self, execution: ExecutionRequested, *, timeout_s: float, worker_id: str,
                results_topic: str) -> Event | None:  # fmt: skip
        """The final event this end reports; None for a run cancelled because it was given up."""
        if self.result is not None:
            return outcomes.succeeded(execution, self.result, results_topic=results_topic,
                                      worker_id=worker_id, now_ms=self.at_ms)  # fmt: skip
        if self.error is not None:
            return outcomes.failed(execution, self.error, worker_id=worker_id, now_ms=self.at_ms)
        if self.timed_out:
            return outcomes.timed_out(execution, timeout_s, worker_id=worker_id,
                                      now_ms=self.at_ms)  # fmt: skip
        return None


class RunHandle(Protocol):
    """What stops a launched run: an :class:`AsyncRun`, or the test driver's stand-in."""

    cancel_requested: bool

    def cancel(self, *, timed_out: bool = False) -> None: ...


class AsyncRun:
    """One async run as the polling thread sees it: ``cancel()`` stops it, begun or not."""

    __slots__ = ("_clock", "_loop", "_on_finish", "cancel_requested", "ctx", "handler",
                 "launched", "log", "started", "task", "timed_out", "token")  # fmt: skip

    def __init__(self, token: int, handler: Handler, ctx: JobContext,
                 loop: asyncio.AbstractEventLoop, on_finish: Callable[[Finished], None],
                 log: RunLog | None = None, clock: Callable[[], int] = now_ms,
                 launched: LaunchStamp | None = None) -> None:  # fmt: skip
        self.token, self.handler, self.ctx, self.log = token, handler, ctx, log
        self.launched = launched
        """Marked when the handler begins (after its instant, for a run claimed ahead)."""
        self._loop, self._on_finish, self._clock = loop, on_finish, clock
        self.cancel_requested = False
        """Read and written by the polling thread only."""
        self.task: asyncio.Task[None] | None = None
        """Set on the loop by the launch that starts the run."""
        self.started = False
        """Set by the run's first step: a task cancelled before it never runs its body."""
        self.timed_out = False
        """Set on the loop: the cancellation is the run's timeout, not a stop that gave it up."""

    def cancel(self, *, timed_out: bool = False) -> None:
        """Thread-safe: the run is cancelled on the loop, and ends ``timed_out`` or
        cancelled (given up)."""
        self.cancel_requested = True
        self._loop.call_soon_threadsafe(self._cancel, timed_out)

    def _cancel(self, timed_out: bool) -> None:
        # Loop callbacks run in the order they were scheduled, and the launch that creates
        # the task was scheduled before submit() returned this handle: the task exists.
        if self.task is None or self.task.done():
            return
        self.timed_out = timed_out
        self.task.cancel()
        if not self.started:  # its body, which reports the end, will never run
            self._on_finish(Finished(self.token, self._clock(), timed_out=timed_out,
                                     cancelled=not timed_out))  # fmt: skip


class JobExecutor:
    """Threads for sync handlers, an event loop for async ones."""

    def __init__(
        self, max_threads: int, on_finish: Callable[[Finished], None], *,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES, clock: Callable[[], int] = now_ms,
    ) -> None:  # fmt: skip
        self._clock = clock
        """Epoch ms: the instant each end tells, and whether a run's instant has come."""
        self._max_threads = max_threads
        self._max_result_bytes = max_result_bytes
        self._on_finish = on_finish
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._busy = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._ready: list[AsyncRun] = []
        """Async runs submitted and not yet picked up by the loop."""
        self._alarms: Alarms | None = None
        """Started with the first sync run claimed ahead of its instant."""

    def submit(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None = None,
               launched: LaunchStamp | None = None) -> AsyncRun | None:  # fmt: skip
        """Start a run (its log lines to ``log``, the instant its handler begins to
        ``launched``); for an async handler, return the handle whose cancel() stops it."""
        if log is not None:
            capture.install()
        if handler.is_async:
            run = AsyncRun(token, handler, ctx, self._event_loop(), self._on_finish, log,
                           self._clock, launched)  # fmt: skip
            with self._lock:
                self._ready.append(run)
                first = len(self._ready) == 1
            if first:  # the loop picks up every run that joins before it gets to it
                self._event_loop().call_soon_threadsafe(self._launch)
            return run
        start = partial(self._run_on_thread,
                        partial(self._run_sync, token, handler, ctx, log, launched))  # fmt: skip
        if ctx.scheduled_at_ms > self._clock():  # claimed ahead: a thread takes it on the instant
            self._on_time().add(ctx.scheduled_at_ms, start)
        else:
            start()
        return None

    def _run_on_thread(self, task: Callable[[], None]) -> None:
        with self._lock:
            self._busy += 1
            if self._busy > len(self._threads) and len(self._threads) < self._max_threads:
                name = f"jobstream-handler-{len(self._threads)}"
                thread = threading.Thread(target=self._serve, daemon=True, name=name)
                self._threads.append(thread)
                thread.start()
        self._tasks.put(task)

    def _on_time(self) -> Alarms:
        if self._alarms is None:
            self._alarms = Alarms()
        return self._alarms

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the threads once idle and cancel what still runs on the event loop."""
        if self._alarms is not None:
            self._alarms.close()
        for _ in self._threads:
            self._tasks.put(None)
        loop, thread = self._loop, self._loop_thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(_cancel_all(timeout_s), loop).result(timeout_s + 1)
        except (concurrent.futures.TimeoutError, RuntimeError):
            log.warning("async handlers did not stop within %.0f s", timeout_s)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        if not thread.is_alive():
            loop.close()

    # -- runs ----------------------------------------------------------------------------

    def _serve(self) -> None:
        while (task := self._tasks.get()) is not None:
            try:
                task()
            finally:
                with self._lock:
                    self._busy -= 1

    def _run_sync(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None,
                  launched: LaunchStamp | None) -> None:  # fmt: skip
        if ctx.cancelled:  # before its instant, for a run claimed ahead
            self._on_finish(Finished(token, self._clock(), cancelled=True))
            return
        self._began(ctx, launched)
        try:
            with capture.capturing(log):
                value = handler.func(ctx)
            result = encode_result(value, max_bytes=self._max_result_bytes)
        except BaseException as exc:  # a worker thread must report SystemExit too, not die
            self._on_finish(Finished(token, self._clock(), error=describe_error(exc)))
            return
        self._on_finish(Finished(token, self._clock(), result=result))

    def _began(self, ctx: JobContext, launched: LaunchStamp | None) -> None:
        """The run's handler begins now: its start lateness counted, its stamp marked."""
        at = self._clock()
        observe_launch(ctx.job_type, ctx.scheduled_at_ms, at)
        if launched is not None:
            launched.mark(at)

    def _launch(self) -> None:
        """On the loop: start every run submitted since the last launch."""
        with self._lock:
            ready, self._ready = self._ready, []
        loop = asyncio.get_running_loop()
        for run in ready:
            run.task = loop.create_task(self._run_async(run))

    async def _run_async(self, run: AsyncRun) -> None:
        run.started = True
        token, ctx = run.token, run.ctx
        capture.CURRENT.set(run.log)  # this task's own context: no other run sees it
        try:
            await asyncio.sleep(max(0, ctx.scheduled_at_ms - self._clock()) / 1000)  # claimed ahead
            self._began(ctx, run.launched)
            value = await run.handler.func(ctx)
            result = encode_result(value, max_bytes=self._max_result_bytes)
        except asyncio.CancelledError:
            self._on_finish(Finished(token, self._clock(), timed_out=run.timed_out,
                                     cancelled=not run.timed_out))  # fmt: skip
            raise
        except Exception as exc:
            self._on_finish(Finished(token, self._clock(), error=describe_error(exc)))
            return
        self._on_finish(Finished(token, self._clock(), result=result))

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                                 name="jobstream-async-handlers")  # fmt: skip
            self._loop_thread.start()
        return self._loop


async def _cancel_all(timeout_s: float) -> None:
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout_s)
