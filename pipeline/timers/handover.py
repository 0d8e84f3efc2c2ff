"""The timers' part in a grow of jobs.intake (docs/adr/0011-partitions-that-grow.md).

Decisions over one partition's :class:`TimerState`, no Kafka here:

- :meth:`Handover.lay_out`: the partition learns the live partition count. An old
  partition whose count went up scans its store, a bounded piece per transaction, and
  hands each record whose home moved to that home: a jobs.retry record (the raw changelog
  value, :data:`HANDOVER_HEADER`) in the same transaction that deletes it here, so the
  runner's transaction moves it exactly once. Once the scan finds no more, it sends
  a SETTLED marker to every partition that waits on it.
- :meth:`Handover.receive`: a handed-over record is written to this store (an entry
  already here wins: a resubmission that reached the new home first); a SETTLED marker is
  recorded, and once every source has settled the partition reads its intake again
  (until then the runner keeps its intake paused, :meth:`Handover.waiting`).
- :meth:`Handover.stray`: a command keyed for another partition (a producer whose metadata
  still had the old count) is forwarded there, unprocessed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from jobstream._pipeline.growth.layout import (
    HANDOVER_HEADER,
    SETTLED_HEADER,
    Layout,
    unrecorded,
)
from jobstream._pipeline.growth.settling import hear, settle, waits
from jobstream._pipeline.growth.strays import forward_stray
from jobstream._pipeline.kafka.headers import header_pairs
from jobstream._pipeline.model.collapse import collapse_of
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.model.time_keys import (
    SCHEDULE_LOWER_BOUND,
    SCHEDULE_UPPER_BOUND,
    decode_schedule_key,
    due_upper_bound,
)
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.runtime.processor import Output, Record
from jobstream._pipeline.timers.homes import home_key
from jobstream._pipeline.timers.nodes import NODE_PREFIX, SIGNAL_PREFIX, WORKFLOW_PREFIX
from jobstream._pipeline.timers.state import TimerState

log = logging.getLogger(__name__)

INDEX = b"j"
Cursor = tuple[int, bytes]
"""Where a handover scan goes on: the index of a range of :data:`RANGES`, a key in it."""
RANGES = (
    (SCHEDULE_LOWER_BOUND, SCHEDULE_UPPER_BOUND),
    *((prefix, bytes([prefix[0] + 1]))
      for prefix in (SIGNAL_PREFIX, INDEX, NODE_PREFIX, WORKFLOW_PREFIX)),
)  # fmt: skip
"""What a handover scan reads, in turn: the due schedule first (from
:data:`HORIZON_MS` on), so that the entries due soonest reach their new home first (the
rest fire where they are until they move); then
every logged record (kept signals, timer entries by their index key, step nodes, workflow
records), which finds the entries the schedule does not hold (paused, blocked, held back
by a rate limit) and those scheduled behind the first pass."""
MOVES_MOST = 500
"""The most records one partition hands over in one transaction."""
HORIZON_MS = 5000
"""An entry due this soon is not handed over by the first pass, which reads the schedule in
due order: it fires where it is, on time, rather than wait in the handover."""
SCAN_MOST = 20_000
"""The most store keys one partition reads for the handover in one transaction."""


@dataclass
class Handover:
    retry: str
    """jobs.retry: handed-over records and SETTLED markers go there, which a waiting
    partition reads while its intake is paused."""
    laid_out_for: int
    """The count a store without a layout record is laid out for (the configured one)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Each input topic's live partition count, as the runner last read it."""
    layouts: dict[int, Layout] = field(default_factory=dict)
    """Each owned partition's layout as last committed."""
    cursors: dict[int, Cursor] = field(default_factory=dict)
    """Where each partition's handover scan goes on from."""
    moved: int = 0
    received: int = 0
    forwarded: int = 0

    def count(self, topic: str) -> int | None:
        return self.counts.get(topic)

    def layout_of(self, state: TimerState) -> Layout:
        live = max(self.counts.values(), default=None)
        return state.layout() or unrecorded(state.partition, self.laid_out_for, live)

    def waiting(self, partition: int) -> bool:
        """Whether ``partition`` must not read its intake yet: a source has not settled."""
        return waits(self.layouts, partition)

    # -- the source's side -----------------------------------------------------------------

    def lay_out(self, state: TimerState, count: int | None, now_ms: int) -> list[Output]:
        """Start, go on with or finish this partition's part of a grow to ``count``."""
        known = self.layouts.get(state.partition)  # as last committed: no read each tick
        if known is not None and known.settled and (count is None or count <= known.count):
            return []
        layout = self.layout_of(state)
        if count is not None and count > layout.count:
            log.info("timer partition %d: jobs.intake grew from %d to %d partitions; handing "
                     "over what moved", state.partition, layout.count, count)  # fmt: skip
            layout = layout.grown(count)
            state.set_layout(layout)
            self.cursors.pop(state.partition, None)
        if layout.settled:
            return []
        # The schedule is read from past the horizon: what is due sooner fires here, and
        # what then still waits is found by the second pass.
        start = (0, due_upper_bound(now_ms + HORIZON_MS))
        outputs, cursor = self._hand_over(state, layout.count,
                                          self.cursors.get(state.partition, start))  # fmt: skip
        if cursor is not None:
            self.cursors[state.partition] = cursor
            return outputs
        self.cursors.pop(state.partition, None)
        return outputs + settle(state, layout, self.retry, "timer")

    def _hand_over(self, state: TimerState, count: int,
                   cursor: Cursor) -> tuple[list[Output], Cursor | None]:  # fmt: skip
        """Hand over the next piece of the store's records whose home is elsewhere; the
        cursor to go on from, None once the whole store was read."""
        outputs: list[Output] = []
        read = 0
        try:
            for at in range(cursor[0], len(RANGES)):
                lower, upper = RANGES[at]
                lower = max(lower, cursor[1]) if at == cursor[0] else lower
                # Read as it goes: deleting the key just read leaves the rest of the scan as
                # it was (the store is written only after the commit).
                for key, raw in state.tx.scan(lower, upper):
                    if read >= SCAN_MOST or len(outputs) >= MOVES_MOST:
                        return outputs, (at, key)
                    read += 1
                    found = _record(state, key, raw)
                    if found is None:
                        continue
                    logged, value = found
                    home = home_key(logged, value)
                    partition = java_partition(home, count)
                    if partition == state.partition:
                        continue
                    state.apply(logged, None)
                    outputs.append(Output(self.retry, home, value, partition,
                                          ((HANDOVER_HEADER, logged),)))  # fmt: skip
            return outputs, None
        finally:
            self.moved += len(outputs)

    # -- the receiver's side ---------------------------------------------------------------

    @staticmethod
    def stands_alone(command: object) -> bool:
        """Whether a command can meet nothing another store may still hand over: a new
        job's submission (no idempotency key, no workflow, no dependency, no collapse key);
        its id is new, so no record of it is anywhere yet."""
        if not isinstance(command, JobSubmitted):
            return False
        return (command.idempotency_key is None and command.workflow_id is None
                and not command.spec.depends_on and collapse_of(command) is None)  # fmt: skip

    def receive(self, state: TimerState, record: Record) -> bool:
        """Take a handed-over record or a SETTLED marker in; False for any other record.
        Only jobs.retry carries them, which no client or owner writes (only the timers,
        the retry router and the API's redrives, which schedule firings there anyway): the
        same headers elsewhere are a record like any other."""
        if record.topic() != self.retry:
            return False
        headers = dict(header_pairs(record))
        if HANDOVER_HEADER in headers:
            key, value = headers[HANDOVER_HEADER], record.value() or b""
            present = state.get(key.decode()) if key[:1] not in _NODES else state.tx.get(key)
            if present is None:
                state.apply(key, value)
                self.received += 1
            return True
        if SETTLED_HEADER in headers:
            hear(state, self.layout_of(state), headers[SETTLED_HEADER], "timer")
            return True
        return False

    def stray(self, state: TimerState, record: Record) -> Sequence[Output]:
        """The record forwarded to the partition its key belongs to under the live count,
        if that is not this one; nothing for a record at home (or with no key)."""
        forwarded = forward_stray(record, state.partition, self.counts)
        if forwarded is None:
            return ()
        self.forwarded += 1
        return [forwarded]

_NODES = (NODE_PREFIX, WORKFLOW_PREFIX, SIGNAL_PREFIX)


def _record(state: TimerState, key: bytes, raw: bytes) -> tuple[bytes, bytes] | None:
    """(changelog key, value) of the record a scanned store key stands for."""
    if key.startswith(SCHEDULE_LOWER_BOUND):
        timer_id = decode_schedule_key(key)[1]
        value = state.tx.get(INDEX + timer_id.encode())
        return None if value is None else (timer_id.encode(), value)
    if key.startswith(INDEX):
        return key[1:], raw
    return key, raw

