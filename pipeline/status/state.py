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

Only ``j``, ``e``, ``c`` and ``h`` entries go to the changelog ``jobs.status.changelog``
(keyed by the store key); the indexes are derived from records, so restoring rebuilds them.

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
    """Finished jobs: when the record is dropped (its jobs.status record stays)."""
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

    def __bytes__(self) -> bytes:
        """The job's jobs.status record: what the runtime writes for this compact output."""
        return self.status_json()

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

    @classmethod
    def decode(cls, raw: bytes) -> JobRecord:
        data = orjson.loads(raw)
        data["state"] = JobState(data["state"])
        data["finished"] = tuple(data["finished"])
        data["waiting_for"] = tuple(data.get("waiting_for", ()))
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
        self._written: set[str] = set()
        """Job ids whose record changed since the last :meth:`flush`."""
        self._runs: dict[bytes, ExecutionRequested | Checkpoint | None] = {}
        """Executions and checkpoints put (or deleted: None) since the last :meth:`flush`,
        by store key."""
        self._changelog: dict[bytes, bytes | None] = {}

    def flush(self) -> list[ChangelogRecord]:
        """Write the changed records into the transaction; return its changelog records.

        The changelog holds the last write of each key only. Call it before producing the
        changelog (and before committing ``tx``): until then records exist as objects only.
        """
        for job_id in self._written:
            key = RECORD_PREFIX + job_id.encode()
            record = self._records[job_id]
            raw = None if record is None else record.encode()
            if raw is None:
                self.tx.delete(key)
            else:
                self.tx.put(key, raw)
            self._changelog[key] = raw
        self._written.clear()
        for key, value in self._runs.items():
            if value is not None:
                raw = _RUN_JSON.encode(value)
                self.tx.put(key, raw)
                self._changelog[key] = raw
            # A run that started and ended within this transaction never reached the store
            # nor the changelog: nothing to delete, no tombstone.
            elif self.tx.get(key) is not None:
                self.tx.delete(key)
                self._changelog[key] = None
        self._runs.clear()
        return list(self._changelog.items())

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
        return record

    def put(self, record: JobRecord) -> None:
        job_id = record.job_id
        self._move_index(job_id, self.get(job_id), record)
        self._records[job_id] = record
        self._written.add(job_id)

    def remove(self, job_id: str) -> None:
        previous = self.get(job_id)
        if previous is not None:
            self._move_index(job_id, previous, None)
            self._records[job_id] = None
            self._written.add(job_id)
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
        self._changelog[LAYOUT_KEY] = raw

    # -- indexes -------------------------------------------------------------------------

    def expired_leases(self, now_ms: int, limit: int) -> list[JobRecord]:
        """RUNNING jobs whose lease deadline is at or before ``now_ms``, earliest first."""
        return list(self._due(LEASE_PREFIX, now_ms, limit))

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

    def restore(self, key: bytes, value: bytes | None) -> None:
        """Apply one changelog record (no changelog output: it came from there).

        Straight to the transaction, past the records kept as objects: restoring uses a
        state of its own, never one that folds events.
        """
        if key.startswith(RECORD_PREFIX):
            job_id = key[len(RECORD_PREFIX) :].decode()
            previous_raw = self.tx.get(key)
            previous = None if previous_raw is None else JobRecord.decode(previous_raw)
            self._move_index(job_id, previous, None if value is None else JobRecord.decode(value))
            if value is not None:
                self.tx.put(key, value)
            elif previous_raw is not None:
                self.tx.delete(key)
        elif key.startswith((EXECUTION_PREFIX, CHECKPOINT_PREFIX)) or key == LAYOUT_KEY:
            if value is None:
                self.tx.delete(key)
            else:
                self.tx.put(key, value)

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
