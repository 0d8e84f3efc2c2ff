"""What the status processor keeps per job, in one RocksDB store per jobs.events partition.

Key spaces (one byte each, after the store's own ``0x00`` metadata keys):

- ``j<job id>``: the :class:`JobRecord` (JSON): the public JobStatus fields and the
  internal ones the machine needs (current epoch, finished executions, lease deadline).
- ``e<job id>``: the ExecutionRequested of the running attempt (JSON, its Avro fields),
  kept apart because
  its parameters may reach 1 MB while the record changes on every heartbeat: the changelog
  then carries the large value once per run, not once per heartbeat.
- ``c<job id>``: the running attempt's latest checkpoint (JSON, its Avro fields), from the
  HEARTBEAT that carried it: a LOST hands it to the next attempt. Kept and dropped with
  the ``e`` entry.
- ``h``: the store's layout (pipeline/growth/layout.py): the jobs.events partition count it
  is laid out for, and how far a grow has gone on it (docs/adr/0013-events-partitions-that-grow.md).
- ``l`` + a timer schedule key (pipeline/model/time_keys.py) by lease deadline, ``q`` + one
  by queue expiry, and ``p`` + one by purge time: indexes, so that expired leases, expired
  QUEUED attempts and finished jobs are range scans.

The store's changelog is jobs.status itself (pipeline/status/record.py,
docs/adr/0014-jobs-status-is-the-status-changelog.md): a job's ``j``, ``e`` and ``c``
entries travel as one record, keyed by the job id, whose value is its public status and
whose headers carry the rest; ``h`` travels as an internal record. A change of the lease
deadline alone writes no record (a heartbeat's): the store keeps it, and a restore gives
every running job a full lease from the restore instead. The indexes are derived from
records, so restoring rebuilds them.

Within one transaction a job's record is decoded at most once and encoded at most once:
:class:`StatusState` keeps the records it has read or written as objects, and
:meth:`StatusState.flush` encodes the written ones when the transaction is about to commit.
Between transactions a :class:`RecordCache` keeps the committed ones, so the next event
of a job usually needs no store read nor decode at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice
from operator import itemgetter
from typing import Any, NamedTuple

import msgspec
import orjson

from jobstream._pipeline.growth.layout import LAYOUT_KEY, Layout
from jobstream._pipeline.kafka.headers import Headers, header_bytes
from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.model.records import (
    Checkpoint,
    CronSchedule,
    ExecutionRequested,
    Priority,
    Progress,
)
from jobstream._pipeline.model.time_keys import (
    SCHEDULE_LOWER_BOUND,
    decode_schedule_key,
    due_upper_bound,
    encode_schedule_key,
)
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.state.batch import ChangelogRecord, PartitionBatch
from jobstream._pipeline.status.record import (
    CHECKPOINT_HEADER,
    EXECUTION_HEADER,
    INTERNAL,
    INTERNAL_PREFIX,
    MOVED,
    RECORD_HEADER,
    internal_key,
)

RECORD_PREFIX = b"j"
EXECUTION_PREFIX = b"e"
CHECKPOINT_PREFIX = b"c"
LEASE_PREFIX = b"l"
PURGE_PREFIX = b"p"
QUEUED_PREFIX = b"q"

FINISHED_KEPT = 20
"""Finished execution ids remembered per job: enough to recognise a redelivered or
zombie outcome of the recent runs; older ones are fenced by their epoch."""

_PUBLIC = tuple(name for name in JobStatus.model_fields if name != "updated_at_ms")


class Cancellation(msgspec.Struct, frozen=True):
    """Why a CANCELLED job was cancelled: jobs.status's ``cancellation``, as kept here."""

    by: str | None
    """Who asked; None when jobstream cancelled it itself (a parent failed)."""
    reason: str | None
    at_ms: int
    worker_id: str | None
    """The worker that stopped its run; None if none ran."""


def _builtins(value: object) -> Any:
    """orjson's fallback for the records a JobRecord holds (cron, progress, cancellation):
    their fields as an object, in field order, enums as their symbols."""
    return msgspec.to_builtins(value)


class JobRecord(NamedTuple):
    """One job as the status processor knows it: JobStatus fields, then internal ones.

    A named tuple rather than a frozen dataclass: every event copies it once or twice with
    a change (:meth:`evolve`), and a tuple is copied in C at a fraction of the cost of a
    dataclass's 24 attribute writes (the hot path of the status processor).

    Its fields are written out rather than made from JobStatus's at import: mypy and a
    reader of the machine need them in the class body. This module refuses to load when
    one of JobStatus's is missing, and tests/pipeline/status/test_state.py holds the
    defaults they share equal.
    """

    job_id: str
    state: JobState
    job_type: str = ""
    owner: str = ""
    workflow_id: str | None = None
    attempt: int = 0
    epoch: int = 0
    """The newest epoch seen (fencing token): outcomes of older epochs are duplicates."""
    priority: Priority = Priority.NORMAL
    scheduled_at_ms: int | None = None
    next_fire_at_ms: int | None = None
    updated_at_ms: int = 0
    last_error: dict[str, str] | None = None
    result: str | None = None
    result_uri: str | None = None
    runs: int = 0
    duplicates: int = 0
    execution_id: str | None = None
    """The current (latest fired or started) execution."""
    worker_id: str | None = None
    """The worker that last started the current execution."""
    lease_deadline_ms: int | None = None
    """RUNNING only: the run is declared lost when no heartbeat arrives before this."""
    finished: tuple[str, ...] = ()
    """Execution ids that already finished (succeeded, failed, timed out or were lost)."""
    cron: CronSchedule | None = None
    """The job's CronSchedule, learnt from an execution's spec."""
    recurring: bool | None = None
    """None until an execution's spec has been seen: SCHEDULED and FIRED carry no spec."""
    fires: int = 0
    """First attempts fired (retries excluded): the timers' run count, for max_runs."""
    purge_at_ms: int | None = None
    """Finished jobs: when the record is dropped (and its jobs.status record deleted)."""
    waiting_for: tuple[str, ...] = ()
    """BLOCKED: the parents (job ids) it still waits for."""
    step: str | None = None
    """Its step name, for a job submitted in a workflow."""
    created_at_ms: int | None = None
    """When the job was submitted; None until its first event (or a spec) told it."""
    labels: dict[str, str] | None = None
    params: str | None = None
    """The parameters' JSON text, when small (pipeline/model/params.py)."""
    params_bytes: int | None = None
    params_sha256: str | None = None
    throttled_ms: int | None = None
    """How long rate limits held the current execution back (its FIRED tells)."""
    params_uri: str | None = None
    """Where the HTTP API serves parameters too large to be inline."""
    cancellation: Cancellation | None = None
    """CANCELLED: who asked, why, when, and the worker that stopped a run."""
    progress: Progress | None = None
    """The current run's latest progress report (fraction, message, at_ms)."""
    pool: str | None = None
    deadline_ms: int | None = None
    queue_limit_ms: int | None = None
    queue_expiry_ms: int | None = None
    """QUEUED only: when the attempt expires if no worker has started it (its queue limit
    or the job's deadline, pipeline/model/deadlines.py)."""
    keys: dict[str, Any] | None = None
    """Its keys as jobs.status shows them (pipeline/model/keys.py ``shown``)."""
    held_by: str | None = None
    """QUEUED and held on a key: ``<kind>:<key>``, from the worker's HELD."""
    joined_job_id: str | None = None
    submitted_by: str | None = None
    """Who submitted the job (its first event tells)."""
    """COLLAPSED: the job it runs as."""

    def evolve(self, **changes: Any) -> JobRecord:
        """A copy with ``changes``; TypeError for a field the record lacks.

        NamedTuple's ``_replace`` pops every field from the changes; an event changes a
        few, so only those are set, by position.
        """
        values = list(self)
        try:
            for name, value in changes.items():
                values[_POSITION[name]] = value
        except KeyError as exc:
            raise TypeError(f"JobRecord has no field {exc}") from None
        return _new_tuple(JobRecord, values)

    def finish(self, execution_id: str | None) -> tuple[str, ...]:
        """``finished`` with ``execution_id`` added, the oldest dropped past the bound."""
        if execution_id is None or execution_id in self.finished:
            return self.finished
        return (*self.finished, execution_id)[-FINISHED_KEPT:]

    def public(self) -> tuple[Any, ...]:
        """The fields a jobs.status reader sees, but the write time: a change is worth a record."""
        return _public(self)

    def to_status(self) -> JobStatus:
        values = dict(zip(_PUBLIC, _public(self), strict=True))
        for name in ("progress", "cancellation"):
            if values[name] is not None:
                values[name] = _builtins(values[name])
        return JobStatus.model_validate({**values, "updated_at_ms": self.updated_at_ms})

    def status_json(self) -> bytes:
        """The jobs.status value: the bytes of ``encode_status(self.to_status())``.

        Built straight from the fields, in JobStatus's order: the runner writes one per job
        per transaction, and pydantic's round trip (validate, dump) took a sixth of the
        processor's CPU. What pydantic would refuse (a negative attempt from a faulty
        producer) is written as it is instead of stopping the processor; tests hold the
        bytes equal.
        """
        values = dict(zip(_STATUS, _status(self), strict=True))
        error = values["last_error"]
        if error is not None:  # LastError's fields only, as the model writes them
            values["last_error"] = {"error_type": error["error_type"], "message": error["message"]}
        return orjson.dumps(values, default=_builtins)

    def encode(self) -> bytes:
        """JSON: an object of every field, in field order (tuples as lists; the schedule,
        progress and cancellation as objects of their fields, as before they were typed).

        Fields added after the first release are left out while empty: a reader from
        before them (a rolling upgrade) then decodes every record that does not use them.
        """
        fields = self._asdict()
        for name in _ADDED:
            if not fields[name]:
                del fields[name]
        return orjson.dumps(fields, default=_builtins)

    def internal_json(self) -> bytes:
        """The fields jobs.status's value does not show (but the lease deadline, which a
        restore gives afresh): the :data:`RECORD_HEADER` of the job's record."""
        fields = dict(zip(_INTERNAL, _internal(self), strict=True))
        return orjson.dumps(fields, default=_builtins)

    @classmethod
    def decode(cls, raw: bytes) -> JobRecord:
        return cls._of(orjson.loads(raw))

    @classmethod
    def from_status(cls, value: bytes, internal: bytes | None) -> JobRecord:
        """The record a jobs.status record carries: its value's fields and its
        :data:`RECORD_HEADER`'s (their defaults when it has none: written before it did)."""
        data = orjson.loads(value)
        if internal is not None:
            data.update(orjson.loads(internal))
        return cls._of(data)

    @classmethod
    def _of(cls, data: dict[str, Any]) -> JobRecord:
        data["state"] = JobState(data["state"])
        data["finished"] = tuple(data.get("finished", ()))
        data["waiting_for"] = tuple(data.get("waiting_for") or ())
        if "params_sha256" in data:  # labels, set with the summary, are left out when empty
            data.setdefault("labels", {})
        data["priority"] = Priority(data["priority"])
        for name, kind in _NESTED:
            if data.get(name) is not None:
                data[name] = msgspec.convert(data[name], kind)
        return cls(**data)


_ADDED = ("waiting_for", "step", "created_at_ms", "labels", "params", "params_bytes",
          "params_sha256", "throttled_ms", "params_uri", "cancellation", "progress", "pool",
          "deadline_ms", "queue_limit_ms", "queue_expiry_ms", "keys", "held_by",
          "joined_job_id", "submitted_by")  # fmt: skip
"""Fields added after the first release: workflows, the submission's summary, rate limits,
large parameters' URI, cancels, progress, pools, time limits and keys."""
_NESTED: tuple[tuple[str, type], ...] = (
    ("cron", CronSchedule), ("progress", Progress), ("cancellation", Cancellation))
"""Fields kept as objects of their own fields, typed again when a record is decoded."""
_POSITION = {name: i for i, name in enumerate(JobRecord._fields)}
_new_tuple = tuple.__new__
_UNREAD = object()
"""Not read in this transaction yet (None is a job known to be absent)."""
_STATUS = tuple(JobStatus.model_fields)
_LACKING = [name for name in _STATUS if name not in _POSITION]
if _LACKING:  # status_json writes every jobs.status field straight from the record
    raise TypeError(f"JobRecord lacks the jobs.status fields {_LACKING}")
_status = itemgetter(*(_POSITION[name] for name in _STATUS))
_INTERNAL = tuple(name for name in JobRecord._fields
                  if name not in JobStatus.model_fields and name != "lease_deadline_ms")
"""What a job's :data:`RECORD_HEADER` holds."""
_internal = itemgetter(*(_POSITION[name] for name in _INTERNAL))
_public = itemgetter(*(_POSITION[name] for name in _PUBLIC))

Changes = dict[str, Any]
"""Fields of a :class:`JobRecord` by name, to :meth:`JobRecord.evolve` it with."""

_RUN_JSON = msgspec.json.Encoder()
_EXECUTION_READER = msgspec.json.Decoder(ExecutionRequested)
"""An ``e`` entry: the ExecutionRequested's fields as a JSON object (the Avro record's
fields, enums as their symbols), as orjson wrote the decoded dict before records were typed."""
_CHECKPOINT_READER = msgspec.json.Decoder(Checkpoint)
"""A ``c`` entry: the Checkpoint's fields as a JSON object, its state in base64."""


class RecordCache:
    """One partition's committed records, kept decoded from one transaction to the next.

    Filled after a commit only (an aborted transaction leaves it as it was) and dropped
    with its partition, so it holds what the store holds. Bounded: the records committed
    longest ago go first.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._records: dict[str, JobRecord | None] = {}

    def __contains__(self, job_id: str) -> bool:
        return job_id in self._records

    def __getitem__(self, job_id: str) -> JobRecord | None:
        return self._records[job_id]

    def __len__(self) -> int:
        return len(self._records)

    def committed(self, records: Mapping[str, JobRecord | None]) -> None:
        """Take the records of a transaction that has committed (None: no record)."""
        for job_id, record in records.items():
            self._records.pop(job_id, None)  # to the end: the most recently committed
            self._records[job_id] = record
        for job_id in list(islice(self._records, max(0, len(self._records) - self.limit))):
            del self._records[job_id]


class StatusState:
    """Reads and writes of one partition's job records within one transaction.

    A record is decoded on its first read and then kept as an object until the transaction
    ends; :meth:`put` moves its index keys at once (so the lease and purge scans of the same
    transaction see them) and :meth:`flush` encodes each written record once.
    """

    def __init__(self, tx: PartitionBatch, partition: int = 0,
                 cache: RecordCache | None = None) -> None:  # fmt: skip
        self.tx = tx
        self.partition = partition
        """The jobs.events partition: LOST and DUPLICATE records are written back to it."""
        self.cache = cache
        """The partition's committed records: read before the store, and given this
        transaction's records by :meth:`committed`."""
        self._records: dict[str, JobRecord | None] = {}
        """Every record read or written in this transaction, as it is now (None: absent)."""
        self._logged: dict[str, JobRecord | None] = {}
        """Each record read or written, as jobs.status last had it (when first read)."""
        self._written: set[str] = set()
        """Job ids whose record changed since the last :meth:`flush`."""
        self._moved: set[str] = set()
        """Job ids removed because a grow handed them to another partition."""
        self._runs: dict[bytes, ExecutionRequested | Checkpoint | None] = {}
        """Executions and checkpoints put (or deleted: None) since the last :meth:`flush`,
        by store key."""
        self._changelog: dict[bytes, ChangelogRecord] = {}
        """jobs.status records of this transaction, by key."""
        self.statuses = 0
        """Jobs' records (tombstones included) the flushes wrote to jobs.status."""

    def flush(self) -> list[ChangelogRecord]:
        """Write the changed records into the transaction; return its jobs.status records.

        One record per job whose record, execution or checkpoint changed, but for a change
        of the lease deadline alone (a heartbeat), which only the store keeps; a tombstone
        for a job removed (marked :data:`MOVED` when a grow handed it over). Call it before
        producing the changelog (and before committing ``tx``): until then records exist
        as objects only.
        """
        run_jobs = {key[1:].decode() for key in self._runs}
        for key, value in self._runs.items():
            if value is not None:
                self.tx.put(key, _RUN_JSON.encode(value))
            # A run that started and ended within this transaction never reached the store:
            # nothing to delete.
            elif self.tx.get(key) is not None:
                self.tx.delete(key)
        self._runs.clear()
        for job_id in self._written | run_jobs:
            record = self.get(job_id)
            if job_id in self._written:
                key = RECORD_PREFIX + job_id.encode()
                if record is None:
                    self.tx.delete(key)
                else:
                    self.tx.put(key, record.encode())
            logged = self._logged.get(job_id)
            if record is None:
                if job_id in self._written:  # removed: it may be on jobs.status
                    moved = MOVED if job_id in self._moved else ()
                    self._changelog[job_id.encode()] = (job_id.encode(), None, moved)
                    self.statuses += 1
            elif job_id in run_jobs or logged is None or not _same_but_lease(logged, record):
                self._changelog[job_id.encode()] = self.status_record(record)
                self.statuses += 1
            self._logged[job_id] = record
        self._written.clear()
        self._moved.clear()
        return list(self._changelog.values())

    def status_record(self, record: JobRecord) -> ChangelogRecord:
        """The job's jobs.status record as the store holds it: its status, its internal
        fields and, while it runs, its execution and checkpoint (pipeline/status/record.py)."""
        headers = [(RECORD_HEADER, record.internal_json())]
        if record.state is JobState.RUNNING:
            job = record.job_id.encode()
            for prefix, name in ((EXECUTION_PREFIX, EXECUTION_HEADER),
                                 (CHECKPOINT_PREFIX, CHECKPOINT_HEADER)):  # fmt: skip
                raw = self.tx.get(prefix + job)
                if raw is not None:
                    headers.append((name, raw))
        return record.job_id.encode(), record.status_json(), headers

    def committed(self) -> None:
        """The transaction has committed: its records are the partition's, for the cache."""
        if self.cache is not None:
            self.cache.committed(self._records)

    @property
    def changed(self) -> bool:
        """Whether this transaction has anything for the store and the changelog."""
        return bool(self._written or self._runs or self._changelog)

    # -- records -------------------------------------------------------------------------

    def get(self, job_id: str) -> JobRecord | None:
        record = self._records.get(job_id, _UNREAD)
        if record is not _UNREAD:  # a job seen twice in one transaction is the rarer case
            return record  # type: ignore[return-value]
        if self.cache is not None and job_id in self.cache:
            record = self.cache[job_id]
        else:
            raw = self.tx.get(RECORD_PREFIX + job_id.encode())
            record = None if raw is None else JobRecord.decode(raw)
        self._records[job_id] = record
        self._logged[job_id] = record
        return record

    def put(self, record: JobRecord) -> None:
        job_id = record.job_id
        self._move_index(job_id, self.get(job_id), record)
        self._records[job_id] = record
        self._written.add(job_id)

    def remove(self, job_id: str, *, moved: bool = False) -> None:
        """Drop the job (purged, or ``moved`` to another partition by a grow)."""
        previous = self.get(job_id)
        if previous is not None:
            self._move_index(job_id, previous, None)
            self._records[job_id] = None
            self._written.add(job_id)
            if moved:
                self._moved.add(job_id)
        self.delete_execution(job_id)

    # -- the running attempt's execution and checkpoint -----------------------------------

    def get_execution(self, job_id: str) -> ExecutionRequested | None:
        key = EXECUTION_PREFIX + job_id.encode()
        if key in self._runs:
            return self._runs[key]  # type: ignore[return-value]
        raw = self.tx.get(key)
        return None if raw is None else _EXECUTION_READER.decode(raw)

    def put_execution(self, job_id: str, execution: ExecutionRequested) -> None:
        self._runs[EXECUTION_PREFIX + job_id.encode()] = execution

    def get_checkpoint(self, job_id: str) -> Checkpoint | None:
        key = CHECKPOINT_PREFIX + job_id.encode()
        if key in self._runs:
            return self._runs[key]  # type: ignore[return-value]
        raw = self.tx.get(key)
        return None if raw is None else _CHECKPOINT_READER.decode(raw)

    def put_checkpoint(self, job_id: str, checkpoint: Checkpoint) -> None:
        self._runs[CHECKPOINT_PREFIX + job_id.encode()] = checkpoint

    def delete_execution(self, job_id: str) -> None:
        """The run has ended: drop its execution and its checkpoint."""
        self._runs[EXECUTION_PREFIX + job_id.encode()] = None
        self._runs[CHECKPOINT_PREFIX + job_id.encode()] = None

    # -- the layout (a grow of jobs.events) ----------------------------------------------

    def layout(self) -> Layout | None:
        """How the store is laid out; None when no grow has touched it."""
        raw = self.tx.get(LAYOUT_KEY)
        return None if raw is None else Layout.decode(raw)

    def set_layout(self, layout: Layout) -> None:
        raw = layout.encode()
        self.tx.put(LAYOUT_KEY, raw)
        key = internal_key(LAYOUT_KEY)
        self._changelog[key] = (key, raw, INTERNAL)

    # -- indexes -------------------------------------------------------------------------

    def expired_leases(self, now_ms: int, limit: int) -> list[JobRecord]:
        """RUNNING jobs whose lease deadline is at or before ``now_ms``, earliest first."""
        return list(self._due(LEASE_PREFIX, now_ms, limit))

    def renew_leases(self, deadline_ms: int) -> int:
        """Move every lease that ends before ``deadline_ms`` to it (a partition taken in:
        its store may not know the heartbeats another process read); how many moved.
        A change of the lease alone: the store's, no jobs.status record."""
        renewed = self.expired_leases(deadline_ms - 1, limit=1 << 62)
        for record in renewed:
            self.put(record.evolve(lease_deadline_ms=deadline_ms))
        return len(renewed)

    def expired_queued(self, now_ms: int, limit: int) -> list[JobRecord]:
        """QUEUED jobs whose queue expiry is at or before ``now_ms``, earliest first."""
        return list(self._due(QUEUED_PREFIX, now_ms, limit))

    def purgeable(self, now_ms: int, limit: int) -> list[JobRecord]:
        """Finished jobs whose retention ended at or before ``now_ms``."""
        return list(self._due(PURGE_PREFIX, now_ms, limit))

    def _due(self, prefix: bytes, now_ms: int, limit: int) -> Iterator[JobRecord]:
        lower, upper = prefix + SCHEDULE_LOWER_BOUND, prefix + due_upper_bound(now_ms)
        found = 0
        for key, _ in self.tx.scan(lower, upper):
            record = self.get(decode_schedule_key(key[len(prefix) :])[1])
            if record is not None:
                yield record
                found += 1
                if found >= limit:
                    return

    def restore(self, key: bytes, value: bytes | None, headers: Headers, *, now_ms: int,
                lease_ms: int) -> bool:  # fmt: skip
        """Apply one jobs.status record (nothing written back: it came from there); False
        for a job's record without its internal fields (written before jobs.status carried
        them), restored with their defaults.

        A running job's lease is not in the record: it runs for ``lease_ms`` from ``now_ms``,
        so a restored processor declares no run lost that a heartbeat kept alive (a run
        fenced already, its execution finished, gets none). Straight to the transaction,
        past the records kept as objects: restoring uses a state of its own, never one
        that folds events.
        """
        if key.startswith(INTERNAL_PREFIX):
            if key[len(INTERNAL_PREFIX):] == LAYOUT_KEY:
                if value is None:
                    self.tx.delete(LAYOUT_KEY)
                else:
                    self.tx.put(LAYOUT_KEY, value)
            return True
        job_id = key.decode()
        store_key = RECORD_PREFIX + key
        previous_raw = self.tx.get(store_key)
        previous = None if previous_raw is None else JobRecord.decode(previous_raw)
        internal = None if value is None else header_bytes(headers, RECORD_HEADER)
        record = None if value is None else JobRecord.from_status(value, internal)
        if record is not None and record.state is JobState.RUNNING and \
                record.execution_id not in record.finished:  # fmt: skip
            record = record.evolve(lease_deadline_ms=now_ms + lease_ms)
        self._move_index(job_id, previous, record)
        if record is not None:
            self.tx.put(store_key, record.encode())
        elif previous_raw is not None:
            self.tx.delete(store_key)
        running = record is not None and record.state is JobState.RUNNING
        for prefix, name in ((EXECUTION_PREFIX, EXECUTION_HEADER),
                             (CHECKPOINT_PREFIX, CHECKPOINT_HEADER)):  # fmt: skip
            raw = header_bytes(headers, name) if running else None
            if raw is not None:
                self.tx.put(prefix + key, raw)
            elif previous is not None and previous.state is JobState.RUNNING:
                self.tx.delete(prefix + key)
        return value is None or internal is not None

    def _move_index(
        self, job_id: str, previous: JobRecord | None, record: JobRecord | None
    ) -> None:
        """Move the lease, queue expiry and purge index keys of a job from ``previous`` to
        ``record``."""
        for prefix, old, new in (
            (LEASE_PREFIX, _lease(previous), _lease(record)),
            (QUEUED_PREFIX, _queue_expiry(previous), _queue_expiry(record)),
            (PURGE_PREFIX, _purge(previous), _purge(record)),
        ):
            if old == new:
                continue
            if old is not None:
                self.tx.delete(prefix + encode_schedule_key(old, job_id))
            if new is not None:
                self.tx.put(prefix + encode_schedule_key(new, job_id), b"")


def _lease(record: JobRecord | None) -> int | None:
    return None if record is None else record.lease_deadline_ms


def _queue_expiry(record: JobRecord | None) -> int | None:
    return None if record is None else record.queue_expiry_ms


def _purge(record: JobRecord | None) -> int | None:
    return None if record is None else record.purge_at_ms


def _same_but_lease(logged: JobRecord, record: JobRecord) -> bool:
    """Whether ``record`` differs from the one jobs.status holds by its lease deadline (and
    write time) alone: a heartbeat's change, which writes no record."""
    return logged.evolve(lease_deadline_ms=record.lease_deadline_ms,
                         updated_at_ms=record.updated_at_ms) == record  # fmt: skip
