"""The view updater in a process of its own, and what the API's process sees of it.

Folding jobs.intake back into the views cost the API more CPU than accepting the jobs did
(docs/benchmarks.md, "The HTTP API"); in a child process the updater has a core of its own
and the API's interpreter serves requests. The child owns the RocksDB files (it writes
them); the API reads them as a RocksDB secondary instance (:meth:`ViewStore.reader`).

After each turn of its loop the child sends one report down a pipe: its counts, whether it
has caught up, the documents the turn changed and the lifecycle events it read. The API's
receiving thread first catches its reader up, then counts the events in its
:class:`Activity` and hands the documents to the listeners (the live stream), so a client
that hears of a change and then reads the job sees that change. The child sends a report
every turn, even an idle one (at most 0.2 s apart), so a silent pipe means a stalled
updater, and a closed one an updater that exited: :meth:`UpdaterProcess.health` says which.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
import threading
import time
from contextlib import suppress
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

import orjson

from jobstream._connectors.views.activity import Activity, Counted
from jobstream._connectors.views.store import ViewStore
from jobstream._connectors.views.updater import STALE_AFTER_S, Listener, UpdaterStats, ViewUpdater
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.logs import configure_logging

log = logging.getLogger(__name__)

class _Forwarded(Activity):
    """The child's activity: what it would count of each event, kept for the next report
    (:class:`Counted`, all the child sends of one)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[Any, ...]] = []
        """As plain tuples: orjson writes no named tuple."""

    def count(self, event: Counted, now_ms: int) -> None:
        self.events.append(tuple(event))


def _follow(settings: Settings, path: Path, retention_ms: int, log_level: str,
            reports: Connection) -> None:  # fmt: skip
    """The child: open the views (or report why not), then fold and report until the API
    sends anything down the pipe (it asks the child to stop) or its end is gone."""
    configure_logging(log_level)
    store = ViewStore(path)
    updater = ViewUpdater(settings, store, retention_ms=retention_ms)
    activity = _Forwarded()
    updater.activity = activity
    changed: list[dict[str, Any]] = []
    updater.listeners.append(changed.extend)
    try:
        updater.open()
    except JobstreamError as exc:
        reports.send_bytes(orjson.dumps({"error": str(exc)}))
        store.close()
        return
    try:
        reports.send_bytes(orjson.dumps({"open": True}))
        while not reports.poll():
            updater.step()
            stats = updater.stats
            reports.send_bytes(orjson.dumps({
                "folded": stats.folded, "skipped": stats.skipped, "purged": stats.purged,
                "caught_up": updater.caught_up(), "docs": changed, "events": activity.events,
            }))  # fmt: skip
            changed.clear()
            activity.events.clear()
    except (BrokenPipeError, EOFError):
        log.warning("the API process is gone: the view updater stops")
    finally:
        updater.close()
        store.close()


def _single_threaded() -> bool:
    """No other thread in this process, native ones (librdkafka's) included."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class UpdaterProcess:
    """The view updater run by a child process; in this one, the views read only and the
    updater's health, counts, activity and changed documents (``listeners``)."""

    def __init__(self, settings: Settings, path: Path, *, retention_ms: int,
                 start_timeout_s: float = 60.0) -> None:  # fmt: skip
        self.path = Path(path)
        self.start_timeout_s = start_timeout_s
        self.stats = UpdaterStats()
        self.activity = Activity()
        self.listeners: list[Listener] = []
        self.store: ViewStore | None = None
        self._caught_up = False
        # A process with one thread (``jobstream api`` starting) forks the child directly,
        # which then needs no imports of its own. Forking a process with other threads
        # copies locks they may hold (librdkafka's native threads: a child forked beside a
        # live client hung in its own client), so one with threads (the tests) starts the
        # child through a fork server, which imports what folding needs once and then forks
        # a ready child for each API started.
        context: BaseContext
        if _single_threaded():
            context = multiprocessing.get_context("fork")
        else:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([__name__])
        self._reports, self._child_end = context.Pipe()
        level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        self._process = context.Process(
            target=_follow, name="jobstream-views", daemon=True,
            args=(settings, self.path, retention_ms, level, self._child_end),
        )  # fmt: skip
        self._reader_dir = tempfile.TemporaryDirectory(prefix="jobstream-views-reader-")
        self._thread = threading.Thread(target=self._receive, name="views", daemon=True)

    def open(self) -> ViewStore:
        """Start the child and wait until it has opened the views, then open them here for
        reading; JobstreamError naming why not (a missing topic, a child that exited)."""
        self._process.start()
        self._child_end.close()  # the child's copy alone: its exit closes the pipe
        try:
            if not self._reports.poll(self.start_timeout_s):
                raise JobstreamError(f"the view updater did not start in "
                                     f"{self.start_timeout_s:.0f} s")  # fmt: skip
            first = orjson.loads(self._reports.recv_bytes())
        except EOFError:
            self._process.join(5)
            raise JobstreamError(f"the view updater exited at start (code "
                                 f"{self._process.exitcode})") from None  # fmt: skip
        if "error" in first:
            raise JobstreamError(first["error"])
        self.store = ViewStore.reader(self.path, Path(self._reader_dir.name))
        self.stats.last_loop = time.monotonic()
        self._thread.start()
        return self.store

    def _receive(self) -> None:
        assert self.store is not None
        while True:
            try:
                report = orjson.loads(self._reports.recv_bytes())
            except (EOFError, OSError):
                return  # the child exited: health() reports it
            if report["folded"] != self.stats.folded or report["purged"] != self.stats.purged:
                self.store.catch_up()
            self.stats.folded, self.stats.skipped = report["folded"], report["skipped"]
            self.stats.purged = report["purged"]
            self.stats.last_loop = time.monotonic()
            self._caught_up = report["caught_up"]
            now = now_ms()
            for event in report["events"]:
                self.activity.count(Counted(*event), now)
            if report["docs"]:
                for listener in self.listeners:
                    listener(report["docs"])

    @property
    def pid(self) -> int | None:
        """The child's process id once started (benchmarks measure its CPU)."""
        return self._process.pid

    def caught_up(self) -> bool:
        """The updater has read every partition up to the end it had when it opened."""
        return self._caught_up

    def health(self) -> str | None:
        """None while the child folds; what is wrong otherwise."""
        if not self._process.is_alive():
            return f"the view updater process exited (code {self._process.exitcode})"
        idle = time.monotonic() - self.stats.last_loop
        if idle > STALE_AFTER_S:
            return f"view updater loop stalled for {idle:.0f} s"
        return None

    def stop_soon(self) -> None:
        """Ask the child to stop after its current turn (:meth:`close` waits for it)."""
        if self._process.pid is not None and not self._reports.closed:
            with suppress(OSError):  # the child has gone already
                self._reports.send_bytes(b"stop")

    def close(self) -> None:
        self.stop_soon()
        if self._process.pid is not None:
            self._process.join(15)
            if self._process.is_alive():
                log.warning("the view updater did not stop in 15 s: terminated")
                self._process.terminate()
                self._process.join(5)
        if self._thread.is_alive():
            self._thread.join(5)
        self._reports.close()
        if self.store is not None:
            self.store.close()
            self.store = None
        self._reader_dir.cleanup()
