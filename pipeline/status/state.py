"""What the status processor keeps per job, in one RocksDB store per jobs.events partition.

Key spaces (one byte each, after the store's own ``0x00`` metadata keys):

- ``j<job id>``: the :class:`JobRecord` (JSON): the public JobStatus fields and the
  internal ones the machine needs (current epoch, finished executions, lease deadline).
- ``e<job id>``: the ExecutionRequested of the running attempt (JSON), kept apart because
  its parameters may reach 1 MB while the record changes on every heartbeat: the
  changelog then carries the large value once per run, not once per heartbeat.
- ``l`` + a timer schedule key (pipeline/timers/keys.py) by lease deadline, and ``p`` + one
  by purge time: indexes, so that expired leases and finished jobs are range scans.

Only ``j`` and ``e`` entries go to the changelog ``jobs.status.changelog`` (keyed by the
store key); the indexes are derived from records, so restoring rebuilds them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import orjson

from pipeline.serde import JobState, JobStatus
from pipeline.state.transaction import PartitionTransaction
from pipeline.timers.keys import (
    SCHEDULE_LOWER_BOUND,
    decode_schedule_key,
    due_upper_bound,
    encode_schedule_key,
)

RECORD_PREFIX = b"j"
EXECUTION_PREFIX = b"e"
LEASE_PREFIX = b"l"
PURGE_PREFIX = b"p"

FINISHED_KEPT = 20
"""Finished execution ids remembered per job: enough to recognise a redelivered or
zombie outcome of the recent runs; older ones are fenced by their epoch."""

_PUBLIC = tuple(name for name in JobStatus.model_fields if name != "updated_at_ms")


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job as the status processor knows it: JobStatus fields, then internal ones."""

    job_id: str
    state: JobState
    job_type: str = ""
    owner: str = ""
    workflow_id: str | None = None
    attempt: int = 0
    epoch: int = 0
    """The newest epoch seen (fencing token): outcomes of older epochs are duplicates."""
    priority: str = "NORMAL"
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
    cron: dict[str, Any] | None = None
    """The job's CronSchedule, learnt from an execution's spec."""
    recurring: bool | None = None
    """None until an execution's spec has been seen: SCHEDULED and FIRED carry no spec."""
    fires: int = 0
    """First attempts fired (retries excluded): the timers' run count, for max_runs."""
    purge_at_ms: int | None = None
    """Finished jobs: when the record is dropped (its jobs.status record stays)."""

    def evolve(self, **changes: Any) -> JobRecord:
        return replace(self, **changes)

    def finish(self, execution_id: str | None) -> tuple[str, ...]:
        """``finished`` with ``execution_id`` added, the oldest dropped past the bound."""
        if execution_id is None or execution_id in self.finished:
            return self.finished
        return (*self.finished, execution_id)[-FINISHED_KEPT:]

    def public(self) -> tuple[Any, ...]:
        """The fields a jobs.status reader sees, but the write time: a change is worth a record."""
        return tuple(getattr(self, name) for name in _PUBLIC)

    def to_status(self) -> JobStatus:
        fields = {name: getattr(self, name) for name in _PUBLIC}
        return JobStatus.model_validate({**fields, "updated_at_ms": self.updated_at_ms})

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, raw: bytes) -> JobRecord:
        data = orjson.loads(raw)
        data["state"] = JobState(data["state"])
        data["finished"] = tuple(data["finished"])
        return cls(**data)


ChangelogRecord = tuple[bytes, bytes | None]


class StatusState:
    """Reads and writes of one partition's job records within one transaction."""

    def __init__(self, tx: PartitionTransaction, partition: int = 0) -> None:
        self.tx = tx
        self.partition = partition
        """The jobs.events partition: LOST and DUPLICATE records are written back to it."""
        self._changelog: dict[bytes, bytes | None] = {}

    @property
    def changelog(self) -> list[ChangelogRecord]:
        """Records for the changelog, the last write of each key only."""
        return list(self._changelog.items())

    # -- records -------------------------------------------------------------------------

    def get(self, job_id: str) -> JobRecord | None:
        raw = self.tx.get(RECORD_PREFIX + job_id.encode())
        return None if raw is None else JobRecord.decode(raw)

    def put(self, record: JobRecord) -> None:
        raw = record.encode()
        self._index(record.job_id, record, raw)
        self._changelog[RECORD_PREFIX + record.job_id.encode()] = raw

    def remove(self, job_id: str) -> None:
        if self._index(job_id, None, None):
            self._changelog[RECORD_PREFIX + job_id.encode()] = None
        self.delete_execution(job_id)

    # -- the running attempt's execution -------------------------------------------------

    def get_execution(self, job_id: str) -> dict[str, Any] | None:
        raw = self.tx.get(EXECUTION_PREFIX + job_id.encode())
        return None if raw is None else orjson.loads(raw)

    def put_execution(self, job_id: str, execution: dict[str, Any]) -> None:
        key = EXECUTION_PREFIX + job_id.encode()
        raw = orjson.dumps(execution)
        self.tx.put(key, raw)
        self._changelog[key] = raw

    def delete_execution(self, job_id: str) -> None:
        key = EXECUTION_PREFIX + job_id.encode()
        if self.tx.get(key) is not None:
            self.tx.delete(key)
            self._changelog[key] = None

    # -- indexes -------------------------------------------------------------------------

    def expired_leases(self, now_ms: int, limit: int) -> list[JobRecord]:
        """RUNNING jobs whose lease deadline is at or before ``now_ms``, earliest first."""
        return list(self._due(LEASE_PREFIX, now_ms, limit))

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
        """Apply one changelog record (no changelog output: it came from there)."""
        if key.startswith(RECORD_PREFIX):
            job_id = key[len(RECORD_PREFIX) :].decode()
            self._index(job_id, None if value is None else JobRecord.decode(value), value)
        elif key.startswith(EXECUTION_PREFIX):
            if value is None:
                self.tx.delete(key)
            else:
                self.tx.put(key, value)

    def _index(self, job_id: str, record: JobRecord | None, raw: bytes | None) -> bool:
        """Write or delete a record and move its index keys; False if nothing existed."""
        key = RECORD_PREFIX + job_id.encode()
        previous_raw = self.tx.get(key)
        previous = None if previous_raw is None else JobRecord.decode(previous_raw)
        for prefix, old, new in (
            (LEASE_PREFIX, _lease(previous), _lease(record)),
            (PURGE_PREFIX, _purge(previous), _purge(record)),
        ):
            if old is not None and old != new:
                self.tx.delete(prefix + encode_schedule_key(old, job_id))
            if new is not None:
                self.tx.put(prefix + encode_schedule_key(new, job_id), b"")
        if record is None or raw is None:
            if previous_raw is None:
                return False
            self.tx.delete(key)
            return True
        self.tx.put(key, raw)
        return True


def _lease(record: JobRecord | None) -> int | None:
    return None if record is None else record.lease_deadline_ms


def _purge(record: JobRecord | None) -> int | None:
    return None if record is None else record.purge_at_ms
