"""A run's log lines, captured as its handler writes them through :mod:`logging`.

One :class:`RunLogHandler` sits on the root logger of a worker process (and of each
child of a process-isolated worker). A record goes to the run named by :data:`CURRENT`,
a :class:`~contextvars.ContextVar` the executor sets around the handler's call: on the
handler's thread for a sync run, in the run's task for an ``async def`` one (a task runs
in a copy of the context, so two runs on one event loop never see each other's). Lines
therefore land in the run that wrote them, however many run at once, and:

- the worker's own lines (its polling thread, where no run is current, and the
  :data:`OWN_LOGGERS` whatever thread they log on) are never a run's;
- what a handler runs in a copy of its context is its own too (``asyncio.to_thread``,
  tasks it creates); a thread it starts itself, or ``loop.run_in_executor``, runs in a
  fresh context, and its lines are not captured;
- a record goes through the loggers' levels first, as for any handler: a run's log holds
  what the worker would have printed (``JOBSTREAM_LOG_LEVEL``), and nothing a logger
  that does not propagate to the root writes.

Every record still reaches the worker's other handlers (its stderr), as before.

:class:`RunLog` bounds what one run keeps: at most ``max_lines`` lines and ``max_bytes``
bytes of them (as JSON lines). It keeps the head: the first line that does not fit, and
every line after it, is counted in :attr:`RunLog.dropped` instead (so the log reads
straight through to the cut, and says where it was cut). A single message or traceback
is cut to :data:`FIELD_CHARS` characters first, so that one huge line cannot take the
whole log. Each line is a :class:`LogLine`: ``at_ms``, ``level``, ``logger``, ``msg``
and, for a record with an exception, ``exc`` (its traceback).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NotRequired, TypedDict

import orjson

DEFAULT_MAX_LOG_LINES = 1000
DEFAULT_MAX_LOG_BYTES = 256 * 1024
FIELD_CHARS = 16 * 1024
"""Longest ``msg`` or ``exc`` of one line; the rest is cut and said so."""
OWN_LOGGERS = ("jobstream._pipeline.worker", "jobstream._pipeline.lifeline")
"""The worker's own loggers: their records are never a run's, on whatever thread."""

_FORMATTER = logging.Formatter()


class LogLine(TypedDict):
    """One line of a run's log, a JSON object on jobs.logs (not an Avro record)."""

    at_ms: int
    level: str
    logger: str
    msg: str
    exc: NotRequired[str]
    """The traceback of a record with an exception (and its stack, if it had one)."""


class RunLog:
    """One run's lines, bounded; thread-safe (a handler's threads and the worker's)."""

    __slots__ = ("_bytes", "_closed", "_lines", "_lock", "dropped", "max_bytes", "max_lines")

    def __init__(self, max_lines: int = DEFAULT_MAX_LOG_LINES,
                 max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> None:  # fmt: skip
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self._lines: list[bytes] = []
        self._bytes = 0
        self._closed = False
        self._lock = threading.Lock()
        self.dropped = 0
        """Lines not kept: the first that did not fit and every one after it."""

    def add(self, line: LogLine) -> None:
        """Keep ``line`` while the head has room; count it as dropped otherwise. Once the
        run's log has been taken, nothing more is kept or counted."""
        # Once the head has ended (or the log was taken) a line is only counted: unencoded.
        self.add_encoded(b"" if self._closed or self.dropped else orjson.dumps(line))

    def add_encoded(self, encoded: bytes) -> None:
        """:meth:`add` for a line already encoded (one JSON object, no newline)."""
        with self._lock:
            if self._closed:
                return
            size = len(encoded) + 1  # its newline
            if (self.dropped or len(self._lines) >= self.max_lines
                    or self._bytes + size > self.max_bytes):  # fmt: skip
                self.dropped += 1
                return
            self._lines.append(encoded)
            self._bytes += size

    def take(self) -> tuple[bytes, int, int]:
        """(the lines as JSON lines, how many, how many were dropped), once: the run has
        ended, and what its handler writes from now on is not kept."""
        with self._lock:
            self._closed = True
            lines, self._lines = self._lines, []
        return b"".join(line + b"\n" for line in lines), len(lines), self.dropped


CURRENT: ContextVar[RunLog | None] = ContextVar("jobstream_run_log", default=None)
"""The run whose handler is running in this context, if any."""


@contextmanager
def capturing(run: RunLog | None) -> Iterator[None]:
    """Route the log records of this context to ``run`` while the block runs."""
    token = CURRENT.set(run)
    try:
        yield
    finally:
        CURRENT.reset(token)


def is_own(logger: str) -> bool:
    """Whether ``logger`` is one of the worker's own (:data:`OWN_LOGGERS`)."""
    return any(logger == own or logger.startswith(own + ".") for own in OWN_LOGGERS)


def cut(text: str, limit: int = FIELD_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [{len(text) - limit:,} characters cut]"


def line_of(record: logging.LogRecord) -> LogLine:
    """A record as one line of a run's log."""
    line: LogLine = {"at_ms": int(record.created * 1000), "level": record.levelname,
                     "logger": record.name, "msg": cut(record.getMessage())}  # fmt: skip
    exc = record.exc_text
    if record.exc_info and not exc:
        exc = _FORMATTER.formatException(record.exc_info)
    if record.stack_info:
        exc = f"{exc}\n{record.stack_info}" if exc else record.stack_info
    if exc:
        line["exc"] = cut(exc)
    return line


class RunLogHandler(logging.Handler):
    """Sends each record logged where a run is current to that run's :class:`RunLog`."""

    def handle(self, record: logging.LogRecord) -> bool:
        # Not logging.Handler.handle: its lock would make every thread that logs wait on
        # every other; RunLog has a lock of its own, per run.
        run = CURRENT.get()
        if run is None or is_own(record.name):
            return False
        try:
            run.add(line_of(record))
        except Exception:  # a record whose message cannot be formatted, as logging reports it
            self.handleError(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


_HANDLER = RunLogHandler()


def install() -> None:
    """Put the capture on the root logger, once. Called at every run's start: setting up
    logging again (``configure_logging`` replaces the root's handlers) must not end it."""
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        root.addHandler(_HANDLER)
