"""Rebuild jobs.status by folding jobs.events again from offset zero.

Every record of jobs.events goes through the live status processor's own code (its
:class:`~jobstream._pipeline.status.processor.StatusProcessor` on the runtime's Task, over scratch
RocksDB
stores), one batch per transaction, with no punctuation: a lease the live processor saw
expire is in jobs.events as the LOST it wrote, so none needs to expire again, and the
fold gives each job the status the live processor wrote last. Only ``updated_at_ms``
(when a status was written) differs: a rebuilt status carries the time of the replay, so
that a reader keeping the newest status (the API's views) takes it.

Each job's rebuilt record is read from the scratch stores once the fold is done, as the
live processor would write it: on the partition of its store (jobs.status is the stores'
changelog, docs/adr/0014-jobs-status-is-the-status-changelog.md), with the headers only the
status processor reads. A job finished longer ago than the retention is left out: the live
processor purged it (its tombstone is on jobs.status).

:func:`compare` sets the rebuilt statuses against the live topic; :func:`write` puts the
ones that differ, or that the topic lacks, back on jobs.status. A status processor that
starts after it reads them on from its checkpoint, as any record of its changelog.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import BrokerError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import JobStatus, decode_status
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.status.processor import StatusProcessor
from jobstream._pipeline.status.record import StatusFold
from jobstream._pipeline.status.state import RECORD_PREFIX, JobRecord, StatusState
from jobstream._pipeline.topics import Topics

Progress = Callable[[int, int], None]
"""Called with (records read, records to read) after each batch."""


class Rebuilt(NamedTuple):
    """One job's jobs.status record as the fold gives it."""

    value: bytes
    partition: int
    """Its store's: the partition of jobs.events its events are on."""
    headers: Sequence[tuple[str, bytes]]


def rebuild_statuses(settings: Settings, *, progress: Progress | None = None,
                     scratch: Path | None = None) -> dict[bytes, Rebuilt]:  # fmt: skip
    """Job id -> the jobs.status record folding jobs.events from offset zero gives."""
    topics = Topics(settings)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="replay-status-") as work, \
            TopicScan(settings, topics.events) as scan:  # fmt: skip
        driver = ProcessorDriver(StatusProcessor(settings), Path(work), partitions=scan.partitions,
                                 keep=False)  # fmt: skip
        read = 0
        try:
            for batch in scan:
                driver.now_ms = now_ms()
                driver.feed(batch)
                read += len(batch)
                if progress is not None:
                    progress(read, scan.total)
            return {key: record for p in scan.partitions
                    for key, record in records_of(driver.store(p), p, now_ms())}  # fmt: skip
        finally:
            driver.close()


def records_of(store: PartitionStore, partition: int,
               now: int) -> list[tuple[bytes, Rebuilt]]:  # fmt: skip
    """Each job's jobs.status record as one status store holds it, but those whose
    retention has passed (the live processor purged them)."""
    state = StatusState(PartitionBatch(store), partition)
    found = []
    for _, raw in store.scan(RECORD_PREFIX, bytes([RECORD_PREFIX[0] + 1])):
        record = JobRecord.decode(raw)
        if record.purge_at_ms is not None and record.purge_at_ms <= now:
            continue
        key, value, *headers = state.status_record(record)
        assert value is not None
        found.append((key, Rebuilt(value, partition, headers[0] if headers else ())))
    return found


def live_statuses(settings: Settings, progress: Progress | None = None) -> dict[bytes, bytes]:
    """Job id -> its latest value on jobs.status (tombstones drop a job from their partition;
    the status store's own records are skipped; pipeline/status/record.py's StatusFold)."""
    latest: StatusFold[bytes] = StatusFold()
    with TopicScan(settings, Topics(settings).status) as scan:
        read = 0
        for batch in scan:
            for message in batch:
                latest.fold(message.key() or b"", message.partition() or 0,
                            message.value() or None, message.headers())  # fmt: skip
            read += len(batch)
            if progress is not None:
                progress(read, scan.total)
    return latest.latest(_written_at)


def _written_at(value: bytes) -> int:
    return int(orjson.loads(value).get("updated_at_ms") or 0)


def comparable(raw: bytes) -> JobStatus:
    """A status, but the time it was written (left at 0)."""
    return decode_status(raw).model_copy(update={"updated_at_ms": 0})


@dataclass
class Comparison:
    equal: int = 0
    differ: list[bytes] = field(default_factory=list)
    """Job ids whose live status is not the rebuilt one."""
    missing: list[bytes] = field(default_factory=list)
    """Job ids jobs.status lacks (or holds as a tombstone)."""
    extra: list[bytes] = field(default_factory=list)
    """Job ids on jobs.status that jobs.events no longer explains (its retention passed)."""

    @property
    def to_write(self) -> list[bytes]:
        return [*self.differ, *self.missing]


def compare(rebuilt: Mapping[bytes, Rebuilt], live: Mapping[bytes, bytes]) -> Comparison:
    found = Comparison()
    for key, record in rebuilt.items():
        held = live.get(key)
        if held is None:
            found.missing.append(key)
        elif comparable(held) == comparable(record.value):
            found.equal += 1
        else:
            found.differ.append(key)
    found.extra = [key for key in live if key not in rebuilt]
    return found


def write(settings: Settings, rebuilt: Mapping[bytes, Rebuilt], keys: list[bytes]) -> int:
    """Produce the rebuilt record of each of ``keys`` to jobs.status, on its store's
    partition; return how many."""
    topic = Topics(settings).status
    producer = clients.producer(settings)
    for i, key in enumerate(keys, 1):
        record = rebuilt[key]
        while True:
            try:
                producer.produce(topic, record.value, key, partition=record.partition,
                                 headers=list(record.headers))  # fmt: skip
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    if left:
        raise BrokerError(f"{left} statuses not acknowledged by the broker")
    return len(keys)
