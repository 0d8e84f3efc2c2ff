"""Handlers in child processes (``--isolation process``): a crash or a hang costs one child.

:class:`ProcessExecutor` has :class:`~jobstream._pipeline.worker.executor.JobExecutor`'s interface
as
the loop uses it (``submit``, ``close``, each end reported as a ``Finished`` on the
callback) and runs every handler, sync or async, in a child process
(pipeline/worker/child.py), one run per child at a time:

- Children outlive their runs: at most ``size`` (the worker's concurrency), started as
  runs need them and kept, so a no-op job costs a message each way on a socket, not a
  process start. A run goes to the child that ran last (its caches are warm).
- A child is a fresh interpreter (fork and exec, as multiprocessing's "spawn" method
  starts one): the worker has librdkafka threads, which a bare fork would copy in
  whatever state they were in. It imports the app by its ``--app`` target, so handlers
  are looked up by job type there; it gets the run's context fields, not the context,
  and encodes the result itself. Not :mod:`multiprocessing`'s ``Process``: its spawn
  imports the worker's ``__main__`` (the whole CLI) again in every child, and what it
  adds beyond a socket pair is not needed here.
- A child that dies mid-run (a signal, ``os._exit``, the out-of-memory killer) ends the
  run FAILED with error type ``WorkerCrashed`` (retryable; the message says how it
  died), so the job follows its retry policy and then its dead-letter topic like any
  failure; the worker goes on.
- :meth:`kill` (a run past its timeout) and :meth:`cancel` stop the run's child: SIGTERM,
  then SIGKILL after a grace. The run ends TIMED_OUT or cancelled once the child is dead
  and a new child has taken its place, so the slot the loop holds for it comes back
  only then, and never while the old child still runs.
- Children die with the worker: each holds the read end of a lifeline whose only write
  end is the worker's (pipeline/lifeline.py), so even a SIGKILLed worker leaves none.
- A child's stdout, stderr and log records come through pipes (pipeline/worker/output.py):
  what it writes during a run joins the run's log lines, read up to the run's end (or
  the child's death) before the end is reported.

One thread per child reads its answers and its death (the socket's end of file), and
reports on the callback, like the executor's threads. A run's progress reports and
checkpoints (``ctx.progress``, ``ctx.checkpoint`` in the child) and the children it spawns
(``ctx.spawn``) come the same way and go to the sinks of the context it was submitted
with; a child spawned before its process died is read before that death is reported, and
so is submitted before the run's end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Literal

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import ConfigurationError
from jobstream._pipeline.lifeline import ENV as LIFELINE_ENV
from jobstream._pipeline.runtime.observed import observe_launch
from jobstream._pipeline.worker.app import Handler, WorkerApp
from jobstream._pipeline.worker.capture import RunLog
from jobstream._pipeline.worker.child import (
    BOOT,
    Began,
    Ended,
    Progressed,
    Ready,
    Run,
    Setup,
    SpawnedChild,
    portable,
    receive,
    send,
)
from jobstream._pipeline.worker.context import JobContext, Report
from jobstream._pipeline.worker.executor import Finished
from jobstream._pipeline.worker.failures import crashed_error, how_it_ended
from jobstream._pipeline.worker.launched import LaunchStamp
from jobstream._pipeline.worker.output import ChildOutput
from jobstream._pipeline.worker.results import DEFAULT_MAX_RESULT_BYTES
from jobstream._pipeline.worker.spawns import Spawned

log = logging.getLogger(__name__)

KILL_GRACE_S = 2.0
"""How long a timed-out run's child has, after SIGTERM, to run its ``finally`` blocks
before SIGKILL."""
CANCEL_GRACE_S = 5.0
"""The same for a cancelled run."""

Ending = Literal["timed_out", "cancelled"]


@dataclass(eq=False, slots=True)
class _Child:
    process: subprocess.Popen[bytes]
    conn: Connection
    output: ChildOutput
    ready: bool = False
    """It has imported the app (it said :class:`Ready`)."""
    token: int | None = None
    """The run it holds."""
    ending: Ending | None = None
    """Set when the run is being stopped: the run ends so once the child is dead."""
    killer: threading.Timer | None = None
    """The SIGKILL that follows the SIGTERM of a stopped run."""


class ProcessExecutor:
    """Up to ``size`` child processes that import ``app`` and run its handlers."""

    def __init__(self, app: str, size: int, on_finish: Callable[[Finished], None], *,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                 kill_grace_s: float = KILL_GRACE_S) -> None:  # fmt: skip
        self._setup = Setup(app, max_result_bytes, logging.getLogger().getEffectiveLevel())
        self._size = size
        self._on_finish = on_finish
        self._kill_grace_s = kill_grace_s
        self._lock = threading.Lock()
        self._children: list[_Child] = []
        self._idle: list[_Child] = []
        """Children without a run, the last one to finish last."""
        self._running: dict[int, _Child] = {}
        self._waiting: deque[Run] = deque()
        """Runs submitted while every child is busy (the loop's slots keep this empty)."""
        self._sinks: dict[int, Callable[[Report], None]] = {}
        """The progress sink of each run's context, until the run ends."""
        self._spawn_sinks: dict[int, Callable[[Spawned], None]] = {}
        """The spawn sink of each run's context, until the run ends."""
        self._logs: dict[int, RunLog] = {}
        """The log of each run submitted and not ended, by token."""
        self._launches: dict[int, tuple[str, int, LaunchStamp | None]] = {}
        """Each run's type, due instant and stamp, until its child says its handler began."""
        self._watchers: list[threading.Thread] = []
        self._closing = False
        # Only this process holds the write end (os.pipe's ends are not inherited; each
        # child gets the read end alone), so the children see EOF once it has ended.
        self._lifeline, self._lifeline_write = os.pipe()

    @classmethod
    def for_app(cls, app: WorkerApp, size: int, on_finish: Callable[[Finished], None], *,
                max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES) -> ProcessExecutor:  # fmt: skip
        """The executor of an app loaded by its ``--app`` target, which the children import."""
        if app.source is None:
            raise ConfigurationError(
                "--isolation process: the handlers' processes import the app by the target "
                "it was loaded from; load it with jobstream._pipeline.worker.app.load_app('module')"
            )
        return cls(app.source, size, on_finish, max_result_bytes=max_result_bytes)

    @property
    def pids(self) -> list[int]:
        """The children's process ids, in the order they were started."""
        with self._lock:
            return [child.process.pid for child in self._children]

    def submit(self, token: int, handler: Handler, ctx: JobContext, log: RunLog | None = None,
               launched: LaunchStamp | None = None) -> None:  # fmt: skip
        """Start a run in an idle child (a new one while there are fewer than ``size``);
        what the child writes during it goes to ``log``, the instant its handler began (told
        by the child with the run's end, or in a :class:`Began` while it goes on) to
        ``launched``."""
        run = Run(token, handler.job_type, portable(ctx))
        with self._lock:
            if self._closing:
                raise RuntimeError("the process executor is closed")
            self._launches[token] = (handler.job_type, ctx.scheduled_at_ms, launched)
            self._sinks[token] = ctx.progress_sink
            self._spawn_sinks[token] = ctx.spawn_sink
            if log is not None:
                self._logs[token] = log
            if self._idle:
                child = self._idle.pop()
            elif len(self._children) < self._size:
                child = self._start()
            else:
                self._waiting.append(run)
                return
            child.token = token
            self._running[token] = child
            child.output.attach(log)
        _send(child, run)

    def kill(self, token: int) -> None:
        """The run is past its timeout: stop its child (SIGTERM, then SIGKILL after
        ``kill_grace_s``); it ends TIMED_OUT once a new child has replaced it."""
        self._stop(token, "timed_out", self._kill_grace_s)

    def cancel(self, token: int, grace_s: float = CANCEL_GRACE_S) -> None:
        """Stop the run as :meth:`kill` does, with ``grace_s``; it ends cancelled."""
        self._stop(token, "cancelled", grace_s)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop every child: idle ones are told to exit, busy ones are stopped as
        :meth:`cancel` stops them (their runs, given up, are not reported)."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._waiting.clear()
            children = list(self._children)
        for child in children:
            if child.token is None:
                _send(child, None)
            else:
                self._signal(child, min(timeout_s, CANCEL_GRACE_S))
        deadline = time.monotonic() + timeout_s
        for watcher in self._watchers:
            watcher.join(max(0.0, deadline - time.monotonic()))
        for child in children:
            if child.process.poll() is None:
                log.warning("a handler's process outlived the worker's close: killed",
                            extra={"pid": child.process.pid})  # fmt: skip
                child.process.kill()
        os.close(self._lifeline_write)
        os.close(self._lifeline)

    # -- children -------------------------------------------------------------------------

    def _start(self) -> _Child:
        """Under the lock: a new child, counted at once; it reads its setup when it is up."""
        ours, theirs = Pipe()
        env = {**os.environ, LIFELINE_ENV: str(self._lifeline)}
        (out, out_w), (err, err_w), (lines, lines_w) = os.pipe(), os.pipe(), os.pipe()
        own_err = os.dup(2)  # the child logs to the worker's stderr as the worker does
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", BOOT, str(theirs.fileno()), *sys.path],
                stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w, env=env,
                pass_fds=(theirs.fileno(), self._lifeline, lines_w, own_err),
            )  # fmt: skip
        except BaseException:
            for fd in (out, err, lines):
                os.close(fd)
            raise
        finally:  # the child's ends: once it has them, the pipes end with it
            for fd in (out_w, err_w, lines_w, own_err):
                os.close(fd)
            theirs.close()
        child = _Child(process, ours, ChildOutput(process.pid, out, err, lines))
        _send(child, replace(self._setup, log_fd=lines_w, stderr_fd=own_err))
        self._children.append(child)
        watcher = threading.Thread(target=self._watch, args=(child,), daemon=True,
                                   name=f"jobstream-child-{process.pid}")  # fmt: skip
        self._watchers = [w for w in self._watchers if w.is_alive()]  # of dead children: gone
        self._watchers.append(watcher)
        watcher.start()
        return child

    def _watch(self, child: _Child) -> None:
        """A child's thread: its answers until its end of file, then its death."""
        while True:
            try:
                message = receive(child.conn)
            except (EOFError, OSError):  # dead (or died writing)
                break
            if isinstance(message, Ready):
                child.ready = True
            elif isinstance(message, Began):
                self._began(message)
            elif isinstance(message, Progressed):
                sink = self._sinks.get(message.token)
                if sink is not None and child.ending is None:
                    sink(message.report)
            elif isinstance(message, SpawnedChild):  # even while stopped: it was spawned
                spawn_sink = self._spawn_sinks.get(message.token)
                if spawn_sink is not None:
                    spawn_sink(message.spawned)
            elif isinstance(message, Ended):
                self._ended(child, message)
        child.conn.close()
        self._died(child, child.process.wait())

    def _ended(self, child: _Child, ended: Ended) -> None:
        if ended.began_at_ms is not None:
            self._began(Began(ended.token, ended.began_at_ms))
        child.output.settle()  # the run's lines are in the pipes: into its log, before its end
        with self._lock:
            if child.ending is not None or child.token != ended.token:
                return  # being stopped: the run ends as it was stopped, once the child is dead
            del self._running[ended.token]
            self._logs.pop(ended.token, None)
            child.token = None
            handoff = self._handoff(child)
        self._finish(Finished(ended.token, ended.at_ms, result=ended.result,
                                 error=ended.error))  # fmt: skip
        if handoff is not None:
            _send(child, handoff)

    def _died(self, child: _Child, returncode: int) -> None:
        """Report the run the child held (if any) once a new child has taken its place."""
        if child.killer is not None:
            child.killer.cancel()
        child.output.settle()  # what it wrote up to its death
        with self._lock:
            self._children.remove(child)
            if child in self._idle:
                self._idle.remove(child)
            token, ending = child.token, child.ending
            if token is not None:
                del self._running[token]
                self._logs.pop(token, None)
            if self._closing:
                return
            replaced = child.ready or bool(self._waiting)
            replacement = self._start() if replaced else None
            handoff = None if replacement is None else self._handoff(replacement)
        how, facts = how_it_ended(returncode), {"pid": child.process.pid, "replaced": replaced}
        if ending is None and child.ready:
            log.warning("a handler's process %s", how, extra=facts)
        elif ending is None:  # it could not import the app, say: its errors are in the log
            log.error("a handler's process %s before it was ready", how, extra=facts)
        if token is not None:
            at = now_ms()
            if ending is None:
                self._finish(Finished(token, at, error=crashed_error(returncode)))
            else:
                self._finish(Finished(token, at, timed_out=ending == "timed_out",
                                         cancelled=ending == "cancelled"))  # fmt: skip
        if replacement is not None and handoff is not None:
            _send(replacement, handoff)

    def _began(self, began: Began) -> None:
        with self._lock:
            launch = self._launches.pop(began.token, None)
        if launch is not None:
            job_type, due_ms, launched = launch
            observe_launch(job_type, due_ms, began.at_ms)
            if launched is not None:
                launched.mark(began.at_ms)

    def _finish(self, finished: Finished) -> None:
        with self._lock:
            self._launches.pop(finished.token, None)
        self._sinks.pop(finished.token, None)
        self._spawn_sinks.pop(finished.token, None)
        self._on_finish(finished)

    def _handoff(self, child: _Child) -> Run | None:
        """Under the lock: the child is free; the next waiting run is its, or it is idle."""
        if self._waiting:
            run = self._waiting.popleft()
            child.token = run.token
            self._running[run.token] = child
            child.output.attach(self._logs.get(run.token))
            return run
        self._idle.append(child)
        return None

    def _stop(self, token: int, ending: Ending, grace_s: float) -> None:
        with self._lock:
            child = self._running.get(token)
            if child is None:
                waiting = next((run for run in self._waiting if run.token == token), None)
                if waiting is None:
                    return  # ended already
                self._waiting.remove(waiting)
                self._logs.pop(token, None)
            elif child.ending is not None:
                return
            else:
                child.ending = ending
        if child is None:  # it never started: it ends at once
            self._finish(Finished(token, now_ms(), timed_out=ending == "timed_out",
                                     cancelled=ending == "cancelled"))  # fmt: skip
            return
        self._signal(child, grace_s)

    def _signal(self, child: _Child, grace_s: float) -> None:
        """SIGTERM now, SIGKILL after ``grace_s`` unless it is dead by then."""
        if child.killer is not None:
            return
        child.killer = threading.Timer(grace_s, child.process.kill)
        child.killer.daemon = True
        child.process.send_signal(signal.SIGTERM)
        child.killer.start()


def _send(child: _Child, message: Setup | Run | None) -> None:
    with contextlib.suppress(OSError):  # dead: its watcher reports the run it held
        send(child.conn, message)
