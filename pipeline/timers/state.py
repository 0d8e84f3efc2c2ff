"""The timer store of one partition: entries by timer id, and a schedule by due instant.

Workflows add step nodes and a blocked index (pipeline/timers/nodes.py); a blocked entry,
like a paused one, has no schedule key until it is released.

Four key spaces (pipeline/model/time_keys.py): ``j<timer id>`` holds the entry,
``s<due minute><due ms><timer id>`` orders pending firings so that the due ones are a
range scan, and ``o<owner><due ms><timer id>`` orders them again by owner, for fair
firing. A job a rate limit holds back leaves both schedules for ``q<limit id><due ms>
<timer id>``, its limit's queue. Only entries go to the changelog; the schedules and the
queues are derived from them, so restoring replays entries and rebuilds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from jobstream._pipeline.growth.layout import LAYOUT_KEY, Layout
from jobstream._pipeline.model.time_keys import (
    HELD_PREFIX,
    HELD_UPPER_BOUND,
    OWNER_PREFIX,
    OWNER_UPPER_BOUND,
    SCHEDULE_LOWER_BOUND,
    decode_held_key,
    decode_owner_schedule_key,
    decode_schedule_key,
    due_upper_bound,
    encode_held_key,
    encode_index_key,
    encode_owner_schedule_key,
    encode_schedule_key,
    held_range_end,
    held_range_start,
    owner_due_bound,
    owner_range_end,
    owner_range_start,
)
from jobstream._pipeline.state.batch import ChangelogRecord, PartitionBatch
from jobstream._pipeline.timers.entry import AnyEntry, TimerEntry
from jobstream._pipeline.timers.nodes import LOGGED_PREFIXES, WorkflowNodes


class TimerState:
    """Reads and writes of timer entries within one partition batch."""

    def __init__(self, tx: PartitionBatch, floor: bytes = SCHEDULE_LOWER_BOUND,
                 partition: int = 0) -> None:  # fmt: skip
        """``floor``: no live schedule key of ``partition`` sorts below it."""
        self.tx = tx
        self.partition = partition
        self.floor = floor
        """Where due scans start. Fired keys are deleted, and RocksDB skips their tombstones
        one by one until a compaction drops them: a scan from the schedule's first key
        walks every timer fired since. A key, not a due instant: a burst due in one
        millisecond fires over many transactions, and a floor at that millisecond would
        have each scan walk every timer the burst fired before. It rises to the first key a
        scan finds and falls with any key scheduled below it."""
        self.changelog: list[ChangelogRecord] = []
        self.held: list[str] = []
        """The job type of each job a rate limit held back in this transaction (metrics)."""
        # Entries decoded in this transaction: firing reads an entry, then replaces or
        # removes it, and each of those needs the entry's current schedule key.
        self._entries: dict[str, AnyEntry | None] = {}
        self._unlogged: set[bytes] = set()
        """Changelog keys of the entries the store did not hold when this transaction
        first read them: the changelog holds none of them (or their tombstone) either."""
        self.nodes = WorkflowNodes(tx, self.changelog)
        """The workflows' step nodes, in the same transaction and changelog."""

    @property
    def changed(self) -> bool:
        return bool(self.changelog)

    def flush(self) -> list[ChangelogRecord]:
        """The changelog records of this transaction (for the runtime, at commit): each
        key's last, where it was last written, as a compaction would keep them (a restore
        reads each key on its own), and none for an entry put and removed within the
        transaction that the store did not hold before it (a job due at once, fired in
        the transaction that scheduled it), whose tombstone would delete nothing."""
        last: dict[bytes, ChangelogRecord] = {}
        for record in self.changelog:
            last.pop(record[0], None)
            last[record[0]] = record
        return [record for key, record in last.items()
                if record[1] is not None or key not in self._unlogged]  # fmt: skip

    def get(self, timer_id: str) -> AnyEntry | None:
        if timer_id not in self._entries:
            # The first read of an entry in this transaction, before any write of it: what
            # the store (and so the changelog) holds.
            raw = self.tx.get(encode_index_key(timer_id))
            if raw is None:
                self._unlogged.add(timer_id.encode())
            self._entries[timer_id] = None if raw is None else TimerEntry.decode(raw)
        return self._entries[timer_id]

    def put(self, entry: AnyEntry) -> None:
        raw = entry.encode()
        self._index(entry.timer_id, entry, raw)
        self.changelog.append((entry.timer_id.encode(), raw))

    def remove(self, timer_id: str) -> None:
        if self._index(timer_id, None, None):
            self.changelog.append((timer_id.encode(), None))

    def restore(self, key: bytes, value: bytes | None) -> None:
        """Apply one changelog record (no changelog output: it came from there)."""
        if key == LAYOUT_KEY:
            if value is None:
                self.tx.delete(key)
            else:
                self.tx.put(key, value)
            return
        if key[:1] in LOGGED_PREFIXES:
            self.nodes.restore(key, value)
            return
        timer_id = key.decode()
        entry = None if value is None else TimerEntry.decode(value)
        self._index(timer_id, entry, value)

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Write (or delete) one record as the changelog carries it, and log it: a record
        handed over from another partition's store, or handed away to it."""
        if key[:1] in LOGGED_PREFIXES:
            self.nodes.apply(key, value)
            return
        timer_id = key.decode()
        entry = None if value is None else TimerEntry.decode(value)
        if self._index(timer_id, entry, value):
            self.changelog.append((key, value))

    def layout(self) -> Layout | None:
        """How the store is laid out (docs/adr/0011-partitions-that-grow.md); None when no
        grow has touched it."""
        raw = self.tx.get(LAYOUT_KEY)
        return None if raw is None else Layout.decode(raw)

    def set_layout(self, layout: Layout) -> None:
        raw = layout.encode()
        self.tx.put(LAYOUT_KEY, raw)
        self.changelog.append((LAYOUT_KEY, raw))

    def due(self, now_ms: int, limit: int) -> list[AnyEntry]:
        """Entries whose due instant is at or before ``now_ms``, earliest first."""
        entries = []
        upper = due_upper_bound(now_ms)
        first: bytes | None = None  # the scan's first key: the lowest live one
        for key, _ in self.tx.scan(self.floor, upper):
            if first is None:
                first = key
            entry = self.get(decode_schedule_key(key)[1])
            if entry is not None:
                entries.append(entry)
            if len(entries) >= limit:
                break
        # Where none is found, none fires at or before now_ms.
        self.floor = max(self.floor, upper if first is None else first)
        return entries

    def due_per_second(self, now_ms: int, seconds: int, most: int) -> list[int]:
        """How many entries fall due in each of the next ``seconds`` seconds (those due by
        now in the first), read from the schedule's keys alone and counting at most
        ``most``: what the fire lead is chosen from (pipeline/timers/lead.py)."""
        counts = [0] * seconds
        upper = due_upper_bound(now_ms + seconds * 1000 - 1)
        for counted, (key, _) in enumerate(self.tx.scan(self.floor, upper), start=1):
            due_ms, _ = decode_schedule_key(key)
            counts[max(0, due_ms - now_ms) // 1000] += 1
            if counted >= most:
                break
        return counts

    def due_owners(self, now_ms: int) -> list[str]:
        """Owners with at least one entry due at ``now_ms``.

        A skip scan: one seek per owner with pending timers, due or not, so it is kept for
        the punctuations that find more due than one batch holds.
        """
        firsts = self._first_of_each(OWNER_PREFIX, OWNER_UPPER_BOUND,
                                     decode_owner_schedule_key, owner_range_end)  # fmt: skip
        return [owner for owner, due_ms in firsts if due_ms <= now_ms]

    def due_of(self, owner: str, now_ms: int) -> Iterator[AnyEntry]:
        """The entries of ``owner`` due at ``now_ms``, earliest first, read as consumed."""
        for key, _ in self.tx.scan(owner_range_start(owner), owner_due_bound(owner, now_ms)):
            entry = self.get(decode_owner_schedule_key(key)[2])
            if entry is not None:
                yield entry

    def held_limits(self) -> list[str]:
        """The ids of the limits holding at least one job back (one seek per limit)."""
        firsts = self._first_of_each(HELD_PREFIX, HELD_UPPER_BOUND, decode_held_key, held_range_end)
        return [limit_id for limit_id, _ in firsts]

    def held_by(self, limit_id: str) -> Iterator[AnyEntry]:
        """The jobs ``limit_id`` holds back, earliest due first, read as consumed."""
        for key, _ in self.tx.scan(held_range_start(limit_id), held_range_end(limit_id)):
            entry = self.get(decode_held_key(key)[2])
            if entry is not None:
                yield entry

    def _first_of_each(self, lower: bytes, upper: bytes,
                       decode: Callable[[bytes], tuple[str, int, str]],
                       range_end: Callable[[str], bytes]) -> Iterator[tuple[str, int]]:  # fmt: skip
        """(name, due_ms) of the first key of each owner's (or limit's) range between
        ``lower`` and ``upper``: a skip scan, one seek per range."""
        while True:
            first = next(self.tx.scan(lower, upper), None)
            if first is None:
                return
            name, due_ms, _ = decode(first[0])
            yield name, due_ms
            lower = range_end(name)

    def _index(self, timer_id: str, entry: AnyEntry | None, raw: bytes | None) -> bool:
        """Write or delete the entry and move its schedule key; False if nothing existed."""
        index_key = encode_index_key(timer_id)
        previous = self.get(timer_id)
        self._entries[timer_id] = entry
        if previous is not None:
            self._unschedule(previous)
        if entry is None or raw is None:
            if previous is None:
                return False
            self.tx.delete(index_key)
            return True
        self.tx.put(index_key, raw)
        if entry.paused or entry.blocked:
            return True
        if entry.held_by is not None:
            self.tx.put(encode_held_key(entry.held_by, entry.due_ms, timer_id), b"")
        else:
            key = encode_schedule_key(entry.due_ms, timer_id)
            self.tx.put(key, b"")
            self.floor = min(self.floor, key)
            self.tx.put(encode_owner_schedule_key(entry.owner, entry.due_ms, timer_id), b"")
        return True

    def _unschedule(self, entry: TimerEntry) -> None:
        """Delete every key that places ``entry`` (deleting an absent key costs nothing)."""
        timer_id = entry.timer_id
        self.tx.delete(encode_schedule_key(entry.due_ms, timer_id))
        self.tx.delete(encode_owner_schedule_key(entry.owner, entry.due_ms, timer_id))
        if entry.held_by is not None:
            self.tx.delete(encode_held_key(entry.held_by, entry.due_ms, timer_id))
