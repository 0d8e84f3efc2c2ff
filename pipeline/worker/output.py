"""What a handler's child process writes during a run, read by the worker into the run's log.

A child of ``--isolation process`` (pipeline/worker/child.py) has three pipes whose read
ends the worker holds: its fd 1 (stdout), its fd 2 (stderr), and a third on which it
writes each log record of a run as the run's log line (:class:`RunLinesHandler`: while a
run is on, and not for the worker's own loggers). Its log records also go, as always, to
the worker's stderr in the worker's JSON format (the child writes them there itself,
through a copy of that fd), so the worker's log reads as before and costs the worker
nothing. One thread per child (:class:`ChildOutput`) reads the pipes as they come:

- every byte of stdout and stderr goes on to the worker's own stdout and stderr, as when
  the child inherited them;
- while the child runs a job, each line goes to the run's
  :class:`~jobstream._pipeline.worker.capture.RunLog`: a line of stdout as logger ``stdout`` at
  INFO, of stderr as ``stderr`` at ERROR, a record's line as the child encoded it.

The child flushes stdout and stderr (its records' lines are written as they are logged)
before it answers a run's end, so when the worker reads that answer every line of the run
is in the pipes: :meth:`ChildOutput.settle` reads what they hold into the run before its
end is reported, a line left without its newline ending there. When a child dies, the
worker reads what it wrote up to its death the same way, so a crash keeps the lines
written before it. Lost on a crash (SIGKILL, the out-of-memory killer, ``os._exit``): what
sat in a buffer inside the child (a C library's ``stdio`` buffer, a
``print(..., end="")`` without its newline: the child's ``sys.stdout`` is line-buffered). A
run reported TIMED_OUT or CANCELLED is reported when the worker decides so, before its
child is dead: what its ``finally`` blocks write after the SIGTERM is not kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import selectors
import threading
import time

import orjson

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.logs import JsonFormatter
from jobstream._pipeline.worker.capture import RunLog, cut, is_own, line_of

STREAM_LEVELS = {"stdout": "INFO", "stderr": "ERROR"}
"""The level of a line a child wrote to each stream."""
BATCH_S = 0.02
"""How long the reading thread lets a child's lines gather after it has read some: one
wake-up per line would cost the worker more than the line (a run's end does not wait
for it: :meth:`ChildOutput.settle` reads what is left)."""
PIPE_BYTES = 1024 * 1024
"""Asked of each pipe (Linux's own limit may be lower), so that the gathering never makes
a child wait to write."""
MAX_PENDING = 64 * 1024
"""A stream's bytes without a newline are taken as a line at this size (a progress bar
redrawn with ``\\r`` never ends one)."""
_READ = 64 * 1024


# -- in the child ---------------------------------------------------------------------


class RunLinesHandler(logging.Handler):
    """In a child: each record of a run (:attr:`running`), but the worker's own loggers',
    as its run's log line on the pipe ``fd``."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.running = False
        """Set by the child while it runs a job."""

    def emit(self, record: logging.LogRecord) -> None:
        if not self.running or is_own(record.name):
            return
        try:
            data = memoryview(orjson.dumps(line_of(record)) + b"\n")
            while data:  # logging's lock serialises the writers: lines never interleave
                data = data[os.write(self.fd, data):]
        except Exception:
            self.handleError(record)


def log_to(stderr_fd: int, lines_fd: int, level: int) -> RunLinesHandler:
    """In a child: its root logger writes JSON lines to the worker's stderr (``stderr_fd``)
    and each run's lines to the pipe ``lines_fd``, at ``level``."""
    to_worker = logging.StreamHandler(open(stderr_fd, "w", buffering=1, closefd=True))  # noqa: SIM115
    to_worker.setFormatter(JsonFormatter())
    lines = RunLinesHandler(lines_fd)
    root = logging.getLogger()
    root.handlers[:] = [to_worker, lines]
    root.setLevel(level)
    return lines


# -- in the worker --------------------------------------------------------------------


class _Stream:
    __slots__ = ("name", "open", "pending", "to")

    def __init__(self, name: str, to: int | None) -> None:
        self.name = name
        self.to = to
        """The worker's own fd its bytes go on to; None: the run's lines, kept only."""
        self.pending = bytearray()
        self.open = True


class ChildOutput:
    """The worker's side of one child's three pipes (read ends, owned from here on)."""

    def __init__(self, pid: int, stdout: int, stderr: int, lines: int) -> None:
        self._streams = {stdout: _Stream("stdout", 1), stderr: _Stream("stderr", 2),
                         lines: _Stream("lines", None)}  # fmt: skip
        self._lock = threading.Lock()
        """Held by whoever reads a pipe: the thread, or :meth:`settle`."""
        self._run: RunLog | None = None
        self._selector = selectors.DefaultSelector()
        for fd in self._streams:
            os.set_blocking(fd, False)
            with contextlib.suppress(OSError):  # over /proc/sys/fs/pipe-max-size: as it is
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            self._selector.register(fd, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name=f"jobstream-output-{pid}")  # fmt: skip
        self._thread.start()

    def attach(self, run: RunLog | None) -> None:
        """The child has started a run: what it writes from now on is ``run``'s."""
        with self._lock:
            self._run = run

    def settle(self) -> None:
        """The child answered the end of its run, or died: read what the pipes hold into
        the run, end its lines left without a newline, and detach it."""
        with self._lock:
            for fd, stream in self._streams.items():
                if stream.open:
                    self._read(fd, stream)
                if stream.pending:
                    self._line(stream, bytes(stream.pending))
                    stream.pending.clear()
            self._run = None

    def _serve(self) -> None:
        while any(stream.open for stream in self._streams.values()):
            # A timeout, because settle() may close the last pipe while this one waits.
            ready = self._selector.select(timeout=1.0)
            with self._lock:
                for key, _ in ready:
                    stream = self._streams[int(key.fd)]
                    if stream.open:
                        self._read(int(key.fd), stream)
            if ready:
                time.sleep(BATCH_S)
        self._selector.close()

    def _read(self, fd: int, stream: _Stream) -> None:
        """Under the lock: read ``fd`` until it has nothing more for now."""
        while True:
            try:
                chunk = os.read(fd, _READ)
            except BlockingIOError:
                return
            if not chunk:  # end of file: the child, and all it started, closed it
                self._selector.unregister(fd)
                os.close(fd)
                stream.open = False
                return
            if stream.to is not None:
                _write_all(stream.to, chunk)
            stream.pending += chunk
            if b"\n" in chunk:
                *lines, rest = stream.pending.split(b"\n")
                stream.pending = bytearray(rest)
                for line in lines:
                    self._line(stream, bytes(line))
            if len(stream.pending) >= MAX_PENDING:
                self._line(stream, bytes(stream.pending))
                stream.pending.clear()

    def _line(self, stream: _Stream, raw: bytes) -> None:
        run = self._run
        if run is None:
            return
        if stream.to is None:  # a record's line, encoded by the child
            run.add_encoded(raw)
            return
        run.add({"at_ms": now_ms(), "level": STREAM_LEVELS[stream.name], "logger": stream.name,
                 "msg": cut(raw.decode(errors="replace").rstrip("\r"))})  # fmt: skip


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:  # the worker's own stream is gone: the run's log still has the line
        return
