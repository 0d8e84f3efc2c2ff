"""The view store: job documents, their indexes, executions, commands, event timelines,
schedules and workers in one RocksDB.

One :class:`~jobstream._pipeline.state.store.PartitionStore` (a bytes store) holds every namespace
of
:mod:`jobstream._connectors.views.layout`. Writes go through a :class:`ViewBatch`, which reads its
own
writes and is applied as one RocksDB write batch together with the offsets of the records
it folded, so after a crash the files hold a prefix of each input partition and the
updater resumes right after it. Readers see whole batches only: the API's threads, and the
API process itself when the updater runs in a process of its own (:meth:`ViewStore.reader`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jobstream._connectors.views import fold, layout, timeline
from jobstream._pipeline.model.records import (
    JobLifecycle,
    JobSubmitted,
    ScheduleChanged,
    WorkerHeartbeat,
    WorkflowCancelled,
    WorkflowSubmitted,
)
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.state.store import PartitionStore

log = logging.getLogger(__name__)


class ViewStore:
    """The RocksDB files of the views at ``path``; reads are safe from any thread."""

    def __init__(self, path: Path, db: PartitionStore | None = None) -> None:
        self.path = Path(path)
        self.db = PartitionStore(self.path) if db is None else db

    @classmethod
    def reader(cls, path: Path, own_dir: Path) -> ViewStore:
        """The views another process writes (the updater's), read only, up to date as of
        the last :meth:`catch_up`."""
        return cls(path, PartitionStore.secondary(Path(path), own_dir))

    def catch_up(self) -> None:
        """A reader: see every batch the writer has committed so far."""
        self.db.catch_up()

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)

    def scan(self, lower: bytes, upper: bytes) -> Iterator[tuple[bytes, bytes]]:
        return self.db.scan(lower, upper)

    def doc(self, job_id: str) -> dict[str, Any] | None:
        raw = self.db.get(layout.doc_key(job_id))
        return None if raw is None else fold.loads(raw)

    def offsets(self) -> dict[tuple[str, int], int]:
        """The next offset to read of every input partition folded so far."""
        found = {}
        for key, value in self.db.scan(layout.OFFSETS, layout.upper_bound(layout.OFFSETS)):
            topic, _, partition = key[1:].partition(b"\x00")
            found[(topic.decode(), int.from_bytes(partition, "big"))] = layout.decode_offset(value)
        return found

    def batch(self) -> ViewBatch:
        return ViewBatch(self)

    def compact(self) -> None:
        """Compact the whole store (after a bulk load: later reads touch fewer files)."""
        self.db.compact()

    def wipe(self) -> None:
        """Drop every view: a replay from offset zero rebuilds them."""
        self.db.wipe()
        self.db.write({layout.LAYOUT: layout.LAYOUT_VERSION}, None)

    def ensure_layout(self) -> bool:
        """Wipe views written in an older layout (they lack what this one keeps, such as
        the counters), so that they are read again from the topics; whether it wiped."""
        if self.db.get(layout.LAYOUT) == layout.LAYOUT_VERSION:
            return False
        stale = bool(self.offsets())
        if stale:
            log.warning("views in an older layout: rebuilding them from the topics",
                        extra={"path": str(self.path)})  # fmt: skip
        self.wipe()
        return stale

    def close(self) -> None:
        self.db.close()


def _schedule_entry(held: Mapping[str, Any]) -> bytes:
    """The ``R`` entry of a recurring workflow's schedule."""
    return layout.schedule_key(held["owner"], held["created_at_ms"], layout.SCHEDULE_WORKFLOW,
                             held["workflow_id"])  # fmt: skip


class ViewBatch:
    """Changes folded into the views, applied at once by :meth:`commit`."""

    def __init__(self, store: ViewStore) -> None:
        self.store = store
        self.changes: dict[bytes, bytes | None] = {}
        self.records = 0
        self.updated: dict[str, dict[str, Any]] = {}
        """The documents this batch changed, or whose commands it changed, by job id (the
        live stream's events)."""

    def get(self, key: bytes) -> bytes | None:
        if key in self.changes:
            return self.changes[key]
        return self.store.get(key)

    def _doc(self, job_id: str) -> dict[str, Any] | None:
        raw = self.get(layout.doc_key(job_id))
        return None if raw is None else fold.loads(raw)

    def _put_doc(self, old: Mapping[str, Any] | None, new: dict[str, Any]) -> None:
        if old == new:
            return
        gone, added = layout.changed(layout.index_keys(old) if old else (), layout.index_keys(new))
        for key in gone:
            self.changes[key] = None
        for key in added:
            self.changes[key] = b""
        self.changes[layout.doc_key(new["job_id"])] = fold.dumps(new)
        self.updated[new["job_id"]] = new
        self._move_count(old, new)

    def _move_count(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Keep the counters (by owner, type and state; by pool, type and state) in step
        with the documents."""
        for count_key in (layout.count_key, layout.pool_count_key):
            gone = None if old is None else count_key(old)
            added = None if new is None else count_key(new)
            if gone == added:
                continue
            for key, step in ((gone, -1), (added, 1)):
                if key is not None:
                    raw = self.get(key)
                    count = (0 if raw is None else layout.decode_offset(raw)) + step  # a >q
                    self.changes[key] = layout.encode_offset(count) if count > 0 else None

    def submitted(self, record: JobSubmitted,
                  location: tuple[int, int] | None = None) -> None:  # fmt: skip
        """A job's submission; ``location``, the (partition, offset) of its record on
        jobs.intake, is kept for parameters too large to keep here."""
        job_id = record.job_id
        old = self._doc(job_id)
        new = fold.apply_submitted(old, record)
        if new is not old:
            params = fold.params_value(record)
            if params is not None:
                self.changes[layout.params_key(job_id)] = params
            elif location is not None:
                self.changes[layout.params_at_key(job_id)] = layout.encode_location(*location)
        self._put_doc(old, new)

    def status(self, status: JobStatus) -> None:
        old = self._doc(status.job_id)
        new = fold.apply_status(old, status)
        params = fold.status_params(new, status)
        if params is not None:
            self.changes[layout.params_key(status.job_id)] = params
        self._put_doc(old, new)

    def event(self, record: JobLifecycle) -> None:
        """An execution's step, and the command a person gave the job if the event records
        one; events of a job the view does not hold yet are kept too (its status or
        submission is on its way on another topic)."""
        self._command(record)
        self._timeline(record)
        execution_id = record.execution_id
        if not execution_id:
            return
        key = layout.execution_key(record.job_id, execution_id)
        raw = self.get(key)
        run = fold.apply_event(None if raw is None else fold.loads(raw), record)
        if run is not None:
            self.changes[key] = fold.dumps(run)

    def _command(self, record: JobLifecycle) -> None:
        """Keep the command ``record`` records beside the job's document; the document, if
        held, goes to the live stream, so that a page showing the job reads it again."""
        job_id = record.job_id
        key = layout.commands_key(job_id)
        raw = self.get(key)
        commands = fold.apply_command(None if raw is None else fold.loads_list(raw), record)
        if commands is None:
            return
        self.changes[key] = fold.dumps(commands)
        if job_id not in self.updated:
            doc = self._doc(job_id)
            if doc is not None:
                self.updated[job_id] = doc

    def _timeline(self, record: JobLifecycle) -> None:
        """Keep the event in the job's timeline (connectors/views/timeline.py)."""
        key = layout.timeline_key(record.job_id)
        raw = self.get(key)
        entries = timeline.apply_event(None if raw is None else fold.loads_list(raw), record)
        if entries is not None:
            self.changes[key] = fold.dumps(entries)

    def workflow_schedule(self, record: WorkflowSubmitted) -> None:
        """A recurring workflow's submission (its template): its schedule, listed with the
        recurring jobs; the first one wins, and one cancelled stays so."""
        key = layout.workflow_schedule_key(record.owner, record.workflow_id)
        if self.get(key) is not None:
            return
        held = fold.workflow_schedule(record)
        self.changes[key] = fold.dumps(held)
        self.changes[_schedule_entry(held)] = b""

    def workflow_cancelled(self, record: WorkflowCancelled) -> None:
        """A workflow's cancel: a recurring one's schedule ends (it leaves the listing)."""
        owner = record.owner
        if not owner:
            return
        key = layout.workflow_schedule_key(owner, record.workflow_id)
        raw = self.get(key)
        if raw is None:
            return
        held = fold.loads(raw)
        if held.get("cancelled_at_ms") is None:
            self.changes[key] = fold.dumps({**held, "cancelled_at_ms": record.requested_at_ms})
            self.changes[_schedule_entry(held)] = None

    def workflow_updated(self, record: ScheduleChanged) -> None:
        """A recurring workflow's UPDATE: the schedule and steps its listing shows (its
        state, next time and runs are its status's, a job of type jobstream.workflow)."""
        owner = record.owner
        if owner is None or record.workflow_id is None:
            return
        key = layout.workflow_schedule_key(owner, record.workflow_id)
        raw = self.get(key)
        if raw is None:
            return
        held = fold.workflow_updated(fold.loads(raw), record)
        if held.get("cancelled_at_ms") is None:
            self.changes[key] = fold.dumps(held)

    def result(self, job_id: str, execution_id: str | None, location: tuple[int, int]) -> None:
        """A run's result on jobs.results at ``location`` (partition, offset): the job's
        latest, and its execution's when the record names it."""
        at = layout.encode_location(*location)
        self.changes[layout.result_at_key(job_id)] = at
        if execution_id:
            self.changes[layout.run_result_key(job_id, execution_id)] = at

    def run_logs(self, job_id: str, execution_id: str, location: tuple[int, int]) -> None:
        """An execution's log lines on jobs.logs at ``location`` (partition, offset)."""
        at = layout.encode_location(*location)
        self.changes[layout.run_logs_key(job_id, execution_id)] = at

    def worker(self, worker_id: str, heartbeat: WorkerHeartbeat | None) -> None:
        """A worker's latest heartbeat (kept as the JSON object of its fields), or None for
        a tombstone."""
        key = layout.worker_key(worker_id)
        self.changes[key] = None if heartbeat is None else fold.dumps(heartbeat)

    def offset(self, topic: str, partition: int, next_offset: int) -> None:
        self.changes[layout.offset_key(topic, partition)] = layout.encode_offset(next_offset)

    def purge(self, before_ms: int, limit: int = 1000) -> int:
        """Drop jobs that ended before ``before_ms``: document, indexes, parameters,
        executions, commands and where their results and log lines are. Reads the store,
        not this batch: call it on a fresh batch."""
        purged = 0
        for key, _ in self.store.scan(layout.RETENTION, layout.retention_upper(before_ms)):
            if purged >= limit:
                break
            job_id = key[-layout.JOB_ID_LENGTH:].decode()
            doc = self._doc(job_id)
            self.changes[key] = None
            if doc is not None:
                for index_key in layout.index_keys(doc):
                    self.changes[index_key] = None
                self._move_count(doc, None)
            self.changes[layout.doc_key(job_id)] = None
            self.changes[layout.params_key(job_id)] = None
            self.changes[layout.params_at_key(job_id)] = None
            self.changes[layout.commands_key(job_id)] = None
            self.changes[layout.timeline_key(job_id)] = None
            self.changes[layout.result_at_key(job_id)] = None
            for prefix in (layout.execution_prefix(job_id), layout.run_result_prefix(job_id),
                           layout.run_logs_prefix(job_id)):  # fmt: skip
                for key_of_run, _ in self.store.scan(prefix, layout.upper_bound(prefix)):
                    self.changes[key_of_run] = None
            purged += 1
        return purged

    def commit(self) -> None:
        if self.changes:
            self.store.db.write(self.changes, None)
        self.changes = {}
        self.records = 0
        self.updated = {}
