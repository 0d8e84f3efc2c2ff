"""Where each record of a timer store belongs once jobs.intake has a given partition count.

A store's records were put there by commands keyed alike (pipeline/partitioning.py): a
job's entries by its workflow id or job id, a debounce window or a singleton by its key's
collapse key (pipeline/model/collapse.py), a workflow's nodes, record, kept signals and
schedule by the workflow id. Each record's **home key** is that key, read back from the
record itself; its home under ``partitions`` is Kafka's murmur2 of it. When jobs.intake
grows (docs/adr/0011-partitions-that-grow.md) the records whose home moved are handed to
their new partition's store.

Pure: no Kafka, no store.
"""

from __future__ import annotations

import struct

from jobstream._pipeline.model.collapse import DEBOUNCE, SINGLETON
from jobstream._pipeline.partitioning import java_partition, partition_key
from jobstream._pipeline.timers.entry import (
    ENDED_PREFIX,
    SCHEDULE_PREFIX,
    DebounceEntry,
    FiringEntry,
    MarkerEntry,
    ScheduleEntry,
    SingletonEntry,
    TimerEntry,
)
from jobstream._pipeline.timers.nodes import LOGGED_PREFIXES

_LENGTH = struct.Struct(">H")


def entry_home_key(timer_id: str, raw: bytes) -> bytes:
    """The record key of the commands that meet the timer entry ``timer_id`` (``raw``)."""
    entry = TimerEntry.decode(raw)
    if isinstance(entry, FiringEntry):
        return partition_key(entry.job.job_id, entry.job.workflow_id)
    if isinstance(entry, DebounceEntry | SingletonEntry):
        # The timer id is "D:" or "G:" and the scoped key, the collapse key's tail.
        kind = DEBOUNCE if isinstance(entry, DebounceEntry) else SINGLETON
        return f"{kind}:{timer_id[2:]}".encode()
    if isinstance(entry, ScheduleEntry):
        return entry.job.job_id.encode()  # a recurring workflow: its id keys its commands
    assert isinstance(entry, MarkerEntry)
    if timer_id.startswith(ENDED_PREFIX) or timer_id.startswith(SCHEDULE_PREFIX):
        return entry.job.job_id.encode()  # an ended workflow's id
    return partition_key(entry.job.job_id, None)


def node_home_key(key: bytes) -> bytes:
    """The workflow id in a node's, a workflow record's or a kept signal's store key
    (``<prefix><u16 owner length><owner><u16 id length><id>...``, pipeline/timers/nodes.py)."""
    (owner_length,) = _LENGTH.unpack_from(key, 1)
    at = 3 + owner_length
    (id_length,) = _LENGTH.unpack_from(key, at)
    return key[at + 2 : at + 2 + id_length]


def home_key(changelog_key: bytes, raw: bytes) -> bytes:
    """The home key of one changelog record (a timer entry's or a workflow record's)."""
    if changelog_key[:1] in LOGGED_PREFIXES:
        return node_home_key(changelog_key)
    return entry_home_key(changelog_key.decode(), raw)


def home_partition(changelog_key: bytes, raw: bytes, partitions: int) -> int:
    """The partition whose store holds this record among ``partitions``."""
    return java_partition(home_key(changelog_key, raw), partitions)

