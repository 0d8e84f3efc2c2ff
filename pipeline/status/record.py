"""A record of jobs.status: the public status of one job, and the status store's changelog
(docs/adr/0014-jobs-status-is-the-status-changelog.md).

jobs.status is co-partitioned with jobs.events: partition p holds the jobs of the status
store of jobs.events' partition p. What a record carries:

- a job's: key the job id, value its JobStatus JSON (docs/status.md, unchanged), and
  headers for the status processor alone: :data:`RECORD_HEADER` (the JobRecord's fields a
  reader of the status does not see, JSON) and, while the job runs,
  :data:`EXECUTION_HEADER` and :data:`CHECKPOINT_HEADER` (the running attempt's
  ExecutionRequested and latest checkpoint, JSON as the store keeps them). Compaction
  keeps a job's last record, so each record of a running job carries them whole.
- a job's tombstone: the job was purged after its retention, or handed to another
  partition in a grow of jobs.events (then marked :data:`MOVED_HEADER`: the job lives on
  in its new partition, which a reader may read first).
- the store's own: key :data:`INTERNAL_PREFIX` + the store key (a NUL byte no job id
  starts with), marked :data:`INTERNAL_HEADER`; only the layout
  (pipeline/growth/layout.py) today. Readers of the statuses skip it (:func:`is_internal`).

A job handed over by a grow has records on two partitions: the old one's end with the
moved tombstone. A reader that reads the partitions in any order and keeps one status per
job folds them with :class:`StatusFold`: each partition's last record of a job, a
tombstone deleting the job there.

Pure: no Kafka, no store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from jobstream._pipeline.kafka.headers import Headers, header_bytes

T = TypeVar("T")

RECORD_HEADER = "jobstream.record"
"""A job's record: its fields jobs.status's value does not show (JSON object)."""
EXECUTION_HEADER = "jobstream.running"
"""A running job's record: the ExecutionRequested of its running attempt (JSON)."""
CHECKPOINT_HEADER = "jobstream.checkpoint"
"""A running job's record: the latest checkpoint its run reported (JSON)."""
INTERNAL_HEADER = "jobstream.internal"
"""A record of the status store that is no job's status (its value is not JobStatus)."""
MOVED_HEADER = "jobstream.moved"
"""A tombstone left by a grow of jobs.events: the job moved to another partition."""

INTERNAL_PREFIX = b"\x00"
"""The first byte of an internal record's key: no job id starts with it."""
INTERNAL = ((INTERNAL_HEADER, b"1"),)
MOVED = ((MOVED_HEADER, b"1"),)


def internal_key(store_key: bytes) -> bytes:
    """The jobs.status key of the status store's own entry ``store_key``."""
    return INTERNAL_PREFIX + store_key


def is_internal(key: bytes | None, headers: Headers) -> bool:
    """Whether a jobs.status record is the store's own, not a job's status."""
    marked = header_bytes(headers, INTERNAL_HEADER) is not None
    return marked or (key or b"").startswith(INTERNAL_PREFIX)


def is_moved(headers: Headers) -> bool:
    """Whether a tombstone was left by a grow (the job lives on elsewhere): what a reader
    that keeps one status per job and drops it on a tombstone must not drop it for."""
    return header_bytes(headers, MOVED_HEADER) is not None


class StatusFold(Generic[T]):
    """The jobs' statuses of jobs.status read in any order of its partitions: per job, each
    partition's last status (a tombstone, moved or purged, deletes it on its partition);
    a job's status is the newest of its partitions' (two hold one only while a grow's
    handover is under way, or while a reader has read one partition further than the
    other)."""

    def __init__(self) -> None:
        self._held: dict[bytes, dict[int, T]] = {}

    def fold(self, key: bytes, partition: int, status: T | None, headers: Headers) -> None:
        """Take one record: ``status`` its decoded value, None for a tombstone."""
        if is_internal(key, headers):
            return
        if status is not None:
            self._held.setdefault(key, {})[partition] = status
            return
        held = self._held.get(key)
        if held is not None:
            held.pop(partition, None)
            if not held:
                del self._held[key]

    def latest(self, written_at: Callable[[T], int]) -> dict[bytes, T]:
        """Each job's status: the one ``written_at`` finds newest."""
        return {key: max(held.values(), key=written_at) for key, held in self._held.items()}
