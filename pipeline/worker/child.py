"""A child process of a process-isolated worker: one handler at a time, for the worker's life.

:class:`~jobstream._pipeline.worker.processes.ProcessExecutor` starts it as a fresh interpreter
(fork
and exec, never a bare fork of the worker, whose librdkafka threads a forked copy would
inherit in whatever state they were in) with one end of a socket pair. It imports the
worker's app module itself (the ``--app`` target, sent in :class:`Setup`), says
:class:`Ready`, then answers each :class:`Run` with an :class:`Ended` until it is told to
stop or its pipe closes.

- The context is rebuilt here from the fields the worker sent (:func:`portable`); the
  result is encoded here too (its size checked against the worker's limit), and its
  bytes cross the pipe for the worker to produce to jobs.results.
- Each ``ctx.progress`` report and ``ctx.checkpoint`` crosses the pipe as a
  :class:`Progressed`, before the run's :class:`Ended`; the worker keeps the latest and
  sends it at its own pace. Each child job ``ctx.spawn`` makes crosses likewise as a
  :class:`SpawnedChild` (its JobSubmitted built and checked here), for the worker's next
  transaction: one spawned before the child process dies is submitted all the same.
- Async handlers run on one event loop kept for the child's life.
- When the handler began (on the run's instant, for a run claimed ahead) goes with the
  :class:`Ended`; a run still going :data:`BEGAN_TOLD_AFTER_S` on, or reporting progress,
  tells it first in a :class:`Began`, for the worker's HEARTBEATs (:class:`_Begun`). A
  short run costs no message more.
- Its stdout and stderr are pipes the worker reads, and its root logger writes each record
  of a run, as the run's log line, to a third (pipeline/worker/output.py), besides the
  worker's stderr: the worker keeps what a run writes with the run's log lines, and
  passes stdout and stderr on to its own. Its ``sys.stdout`` is line-buffered, and both
  streams are flushed before a run's end is answered, so the run's lines are in the
  pipes when the worker reads its end.
- SIGTERM (the worker stopping a run at its timeout, or cancelling it) raises
  :class:`Terminated` in the handler, so its ``finally`` blocks run, and the child then
  dies of that SIGTERM without answering: the worker decided the run's end when it sent
  the signal. A handler that swallows it is killed by the worker's SIGKILL. SIGINT is
  ignored: Ctrl-C in a terminal reaches the whole process group, and the worker drains
  on it, letting the runs finish.
- When the worker dies, however it dies, its end of the lifeline closes
  (pipeline/lifeline.py): the child stops as on SIGTERM, and kills itself
  :data:`LIFELINE_GRACE_S` later if it has not.

This module imports only what a handler needs (the app registry, the context, result
encoding, failures.py), not the Avro serde: a child costs about 15 MB and 0.15 s to start
plus its app's own imports, against 70 MB and a second with the serde.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import FrameType, MappingProxyType
from typing import Any

from jobstream._pipeline.clock import now_ms, seconds_until
from jobstream._pipeline.lifeline import watch_supervisor
from jobstream._pipeline.logs import configure_logging
from jobstream._pipeline.worker.app import WorkerApp, load_app
from jobstream._pipeline.worker.context import JobContext, Report
from jobstream._pipeline.worker.failures import ErrorDescription, describe_error
from jobstream._pipeline.worker.output import RunLinesHandler, log_to
from jobstream._pipeline.worker.results import EncodedResult, encode_result
from jobstream._pipeline.worker.spawns import Spawned

log = logging.getLogger(__name__)

LIFELINE_GRACE_S = 5.0
"""How long a child whose worker has died may take to stop before it kills itself."""
BEGAN_TOLD_AFTER_S = 0.05
"""A run going on this long has its begin told in a :class:`Began` of its own."""

BOOT = ("import sys; sys.path[:] = sys.argv[2:]; "
        "from jobstream._pipeline.worker.child import main; main(int(sys.argv[1]))")  # fmt: skip
"""The child's program (``python -c BOOT fd *sys.path``): the worker's import path as it is,
as multiprocessing's spawn does, so that the child finds what the worker found (an app
module beside the current directory, a test tree on pytest's path)."""


# The messages are frozen dataclasses without slots: pickle takes such an object's
# __dict__ as it is, where a slotted one costs a dataclasses.fields() walk each way.


@dataclass(frozen=True)
class Setup:
    """The first message a child receives."""

    app: str
    """The ``--app`` target (``module`` or ``module:attribute``) the child imports."""
    max_result_bytes: int
    """The worker's limit on a result's size."""
    log_level: int
    """The worker's logging level: a handler's logs read as they would in the worker."""
    log_fd: int | None = None
    """The pipe each run's log lines go to (pipeline/worker/output.py)."""
    stderr_fd: int | None = None
    """A copy of the worker's stderr, where it logs as the worker does; None (with
    ``log_fd``): its own stderr, and no run's lines."""


@dataclass(frozen=True)
class Ready:
    """The child has imported its app and waits for runs."""

    pid: int


PortableContext = dict[str, Any]
"""A :class:`JobContext` as it crosses to a child (:func:`portable`): its plain fields by
name, without the cancel signal, the sinks and the spawn ledger, ``parent_results`` as a
dict (a read-only view does not pickle; it is one again in the child)."""


@dataclass(frozen=True)
class Run:
    """One run to start."""

    token: int
    job_type: str
    """Whose handler runs it."""
    context: PortableContext


@dataclass(frozen=True)
class Ended:
    """How a run ended; exactly one of ``result`` and ``error`` is set."""

    token: int
    at_ms: int
    result: EncodedResult | None = None
    error: ErrorDescription | None = None
    began_at_ms: int | None = None
    """When its handler began; None when it never did (its app or context failed)."""


@dataclass(frozen=True)
class Began:
    """The run's handler began at ``at_ms`` (after its instant, for a run claimed ahead):
    told while it goes on (:class:`_Begun`)."""

    token: int
    at_ms: int


@dataclass(frozen=True)
class Progressed:
    """A progress report or a checkpoint of the run the child holds (``ctx.progress``,
    ``ctx.checkpoint``)."""

    token: int
    report: Report


@dataclass(frozen=True)
class SpawnedChild:
    """A child job the run the child holds has spawned (``ctx.spawn``)."""

    token: int
    spawned: Spawned


class Terminated(BaseException):
    """Raised by SIGTERM in whatever the child runs: the worker is stopping this run."""


def portable(ctx: JobContext) -> PortableContext:
    """What of a context crosses to a child: every field but the cancel signal (a child's
    run is cancelled by SIGTERM, which raises :class:`Terminated` in the handler), the
    sinks (a child's reports cross as :class:`Progressed`, its spawns as
    :class:`SpawnedChild`), the spawn ledger (the run's, new in the child) and the lease (a
    child's run that loses it is terminated, as a cancelled one is)."""
    fields = dict(vars(ctx))
    del fields["cancel_signal"], fields["progress_sink"]
    del fields["spawn_sink"], fields["spawn_ledger"], fields["lease"]
    fields["parent_results"] = dict(ctx.parent_results)
    return fields


def send(
    conn: Connection,
    message: Setup | Ready | Run | Began | Progressed | SpawnedChild | Ended | None,
) -> None:
    """Plain pickle: the connection's own pickler copies its reducer table every call."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> Any:
    """The next message; EOFError once the other end has closed."""
    return pickle.loads(conn.recv_bytes())


def main(fd: int) -> None:
    """Serve runs on the socket ``fd`` until told to stop or until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    watch_supervisor(LIFELINE_GRACE_S)
    conn = Connection(fd)
    try:
        setup: Setup = receive(conn)
        lines: RunLinesHandler | None = None
        if setup.log_fd is None or setup.stderr_fd is None:
            configure_logging(logging.getLevelName(setup.log_level))
        else:
            lines = log_to(setup.stderr_fd, setup.log_fd, setup.log_level)
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        app = load_app(setup.app)
        loop = asyncio.new_event_loop()
        send(conn, Ready(os.getpid()))
        lock = threading.Lock()  # a handler may report from threads of its own
        begun = _Begun(conn, lock)
        while (run := _next(conn)) is not None:
            if lines is not None:
                lines.running = True
            ended = _run(app, setup.max_result_bytes, loop, run,
                         _Sinks(conn, lock, run.token, begun))  # fmt: skip
            if lines is not None:
                lines.running = False
            if _terminating:  # a handler swallowed the SIGTERM: it still ends the child
                raise Terminated
            _flush()
            with lock:
                begun.ended()
                send(conn, ended)
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)  # dies of it: the worker sees how


def _next(conn: Connection) -> Run | None:
    try:
        run: Run | None = receive(conn)
    except EOFError:  # the worker closed the pipe
        return None
    return run


class _Sinks:
    """The sinks of run ``token``'s context: each report and each spawned child to the
    worker, as it comes (a handler may report from threads of its own: one ``lock``)."""

    def __init__(self, conn: Connection, lock: threading.Lock, token: int,
                 begun: _Begun) -> None:  # fmt: skip
        self._conn, self._lock, self._token, self.begun = conn, lock, token, begun

    def progress(self, report: Report) -> None:
        with self._lock:
            self.begun.tell()  # before the report: a HEARTBEAT carrying it tells the launch
            send(self._conn, Progressed(self._token, report))

    def spawn(self, spawned: Spawned) -> None:
        with self._lock:
            send(self._conn, SpawnedChild(self._token, spawned))


def _run(app: WorkerApp, max_result_bytes: int, loop: asyncio.AbstractEventLoop,
         run: Run, sinks: _Sinks) -> Ended:  # fmt: skip
    began: int | None = None
    try:
        handler = app.get(run.job_type)
        ctx = _context(run.context, sinks.progress, sinks.spawn)
        time.sleep(seconds_until(ctx.scheduled_at_ms))  # claimed ahead of its instant
        began = sinks.begun.begin(run.token)
        value = handler.func(ctx)
        if handler.is_async:
            value = loop.run_until_complete(value)
        result = encode_result(value, max_bytes=max_result_bytes)
    except Terminated:
        raise
    except BaseException as exc:  # SystemExit too, as on a worker's thread
        return Ended(run.token, now_ms(), error=describe_error(exc), began_at_ms=began)
    return Ended(run.token, now_ms(), result=result, began_at_ms=began)


class _Begun:
    """When the run in hand began, told to the worker once: with its :class:`Ended`, or
    sooner in a :class:`Began`, by a thread that looks every :data:`BEGAN_TOLD_AFTER_S`
    and tells a run it saw in hand the look before (so one gone on at least that long),
    or before its first progress report. Every message leaves under the child's one lock,
    so a Began never follows its run's Ended."""

    def __init__(self, conn: Connection, lock: threading.Lock) -> None:
        self._conn, self._lock = conn, lock
        self._untold: tuple[int, int] | None = None
        """(token, began at ms) of the run in hand, until told."""
        threading.Thread(target=self._watch, daemon=True, name="jobstream-began").start()

    def begin(self, token: int) -> int:
        at = now_ms()
        self._untold = (token, at)
        return at

    def ended(self) -> None:
        """Under the lock, as its Ended leaves: told with it."""
        self._untold = None

    def tell(self) -> None:
        """Under the lock: a Began for the run in hand, unless told already."""
        untold, self._untold = self._untold, None
        if untold is not None:
            send(self._conn, Began(*untold))

    def _watch(self) -> None:
        seen = None
        while True:
            time.sleep(BEGAN_TOLD_AFTER_S)
            with self._lock:
                if seen is not None and self._untold is seen:
                    try:
                        self.tell()
                    except OSError:  # the worker is gone: the child ends with its pipe
                        return
                seen = self._untold


def _flush() -> None:
    """The run's output into the pipes, before its end is answered."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError) as exc:  # closed or broken by the handler: its loss
            log.warning("could not flush the run's %s: %s", stream.name, exc)


def _context(fields: PortableContext, progress_sink: Callable[[Report], None],
             spawn_sink: Callable[[Spawned], None]) -> JobContext:  # fmt: skip
    """The context :func:`portable` took apart, its reports going to ``progress_sink`` and
    its spawned children to ``spawn_sink``."""
    fields["parent_results"] = MappingProxyType(fields["parent_results"])
    return JobContext(**fields, progress_sink=progress_sink, spawn_sink=spawn_sink)


_terminating = False


def _terminate(signum: int, frame: FrameType | None) -> None:
    global _terminating
    _terminating = True
    raise Terminated
