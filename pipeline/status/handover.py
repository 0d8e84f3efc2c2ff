"""The status processor's part in a grow of jobs.events
(docs/adr/0013-events-partitions-that-grow.md).

A job's record lives in the store of its jobs.events partition: the partition of its
events' key (its workflow id, else its job id, pipeline/partitioning.py) among jobs.events'
partitions. When jobs.events grows, a job whose key now falls on another partition must be
folded there. Decisions over one partition's :class:`StatusState`, no Kafka here:

- :meth:`StatusHandover.lay_out`: an old partition whose count went up scans its job
  records, a bounded piece per transaction, and hands each job whose home moved (its
  record, its running attempt's execution and checkpoint: one :class:`Moved`) to that home
  on jobs.status.handover, in the same transaction that removes it here (record, indexes
  and its jobs.status record: a tombstone marked moved, which readers of the statuses
  skip), so the runner's transaction moves it exactly once. Once the scan finds
  no more, a SETTLED marker goes to every partition that waits on it.
- :meth:`StatusHandover.receive`: a moved job is written to this store, its lease, queue
  expiry and purge indexes with it, unless the store already holds that job (then the
  record here wins); a SETTLED marker is recorded. A partition that still waits for a
  source reads no jobs.events (:meth:`StatusHandover.waiting`, the runner pauses it).
- :meth:`StatusHandover.stray`: an event keyed for another partition (a producer whose
  metadata still had the old count) is forwarded there, unprocessed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from jobstream._pipeline.growth.layout import (
    HANDOVER_HEADER,
    SETTLED_HEADER,
    Layout,
    unrecorded,
)
from jobstream._pipeline.growth.settling import hear, settle, waits
from jobstream._pipeline.growth.strays import forward_stray
from jobstream._pipeline.kafka.headers import header_pairs
from jobstream._pipeline.model.records import Checkpoint, ExecutionRequested
from jobstream._pipeline.partitioning import java_partition, partition_key
from jobstream._pipeline.runtime.processor import Output, Record
from jobstream._pipeline.status.state import RECORD_PREFIX, JobRecord, StatusState

log = logging.getLogger(__name__)

MOVES_MOST = 500
"""The most jobs one partition hands over in one transaction."""
SCAN_MOST = 20_000
"""The most job records one partition reads for the handover in one transaction."""
_RECORDS_END = bytes([RECORD_PREFIX[0] + 1])


class Moved(msgspec.Struct, frozen=True):
    """One job handed over: its store entries as the changelog holds them."""

    record: bytes
    execution: bytes | None = None
    checkpoint: bytes | None = None


_MOVED = msgspec.msgpack.Encoder()
_MOVED_READER = msgspec.msgpack.Decoder(Moved)


def home_key(record: JobRecord) -> bytes:
    """The key of the job's events: what places its record among jobs.events' partitions."""
    return partition_key(record.job_id, record.workflow_id)


@dataclass
class StatusHandover:
    handover: str
    """jobs.status.handover: moved jobs and SETTLED markers, which a waiting partition
    reads while its jobs.events is paused."""
    events: str
    """jobs.events: its live partition count places every job."""
    laid_out_for: int
    """The count a store without a layout record is laid out for (the configured one)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Each input topic's live partition count, as the runner last read it."""
    layouts: dict[int, Layout] = field(default_factory=dict)
    """Each owned partition's layout as last committed."""
    cursors: dict[int, bytes] = field(default_factory=dict)
    """The job record key each partition's handover scan goes on from."""
    moved: int = 0
    received: int = 0
    kept: int = 0
    """Moved jobs not written: the receiving store held the job already."""
    forwarded: int = 0

    @property
    def count(self) -> int | None:
        return self.counts.get(self.events)

    def layout_of(self, state: StatusState) -> Layout:
        return state.layout() or unrecorded(state.partition, self.laid_out_for, self.count)

    def waiting(self, partition: int) -> bool:
        """Whether ``partition`` must not read jobs.events yet: a source has not settled."""
        return waits(self.layouts, partition)

    def busy(self, partition: int) -> bool:
        """Whether ``partition`` is in a grow: it waits for its sources, or still holds jobs
        whose home is elsewhere. It then expires no lease nor queued attempt: the
        heartbeats of a job not yet moved go to its new home, and those of a job moved in
        wait on the paused jobs.events."""
        layout = self.layouts.get(partition)
        return layout is not None and (not layout.settled or bool(layout.waits_for(partition)))

    # -- the source's side -----------------------------------------------------------------

    def lay_out(self, state: StatusState) -> list[Output]:
        """Start, go on with or finish this partition's part of a grow to the live count."""
        count = self.count
        known = self.layouts.get(state.partition)  # as last committed: no read each tick
        if known is not None and known.settled and (count is None or count <= known.count):
            return []
        layout = self.layout_of(state)
        if count is not None and count > layout.count:
            log.info("status partition %d: jobs.events grew from %d to %d partitions; "
                     "handing over what moved", state.partition, layout.count, count)  # fmt: skip
            layout = layout.grown(count)
            state.set_layout(layout)
            self.cursors.pop(state.partition, None)
            self.layouts[state.partition] = layout  # busy from now on, committed or not
        if layout.settled:
            return []
        outputs, cursor = self._hand_over(state, layout.count,
                                          self.cursors.get(state.partition, RECORD_PREFIX))
        if cursor is not None:
            self.cursors[state.partition] = cursor
            return outputs
        self.cursors.pop(state.partition, None)
        return outputs + settle(state, layout, self.handover, "status")

    def _hand_over(self, state: StatusState, count: int,
                   cursor: bytes) -> tuple[list[Output], bytes | None]:  # fmt: skip
        """Hand over the next piece of the jobs whose home is elsewhere; the key to go on
        from, None once every record was read."""
        outputs: list[Output] = []
        read = 0
        # Removing the job just read leaves the rest of the scan as it was: the records
        # reach the batch only when the transaction is flushed.
        for key, _ in state.tx.scan(cursor, _RECORDS_END):
            if read >= SCAN_MOST or len(outputs) >= MOVES_MOST:
                self.moved += len(outputs)
                return outputs, key
            read += 1
            record = state.get(key[len(RECORD_PREFIX):].decode())
            if record is None:
                continue
            home = home_key(record)
            partition = java_partition(home, count)
            if partition == state.partition:
                continue
            moved = _moved(state, record)
            state.remove(record.job_id, moved=True)  # its tombstone here says it moved
            outputs.append(Output(self.handover, home, _MOVED.encode(moved), partition,
                                  ((HANDOVER_HEADER, key),)))  # fmt: skip
        self.moved += len(outputs)
        return outputs, None

    # -- the receiver's side ---------------------------------------------------------------

    def receive(self, state: StatusState, record: Record) -> bool:
        """Take a moved job or a SETTLED marker in; False for any other record."""
        if record.topic() != self.handover:
            return False
        headers = dict(header_pairs(record))
        if HANDOVER_HEADER in headers:
            moved = _MOVED_READER.decode(record.value() or b"")
            job = JobRecord.decode(moved.record)
            if state.get(job.job_id) is not None:
                self.kept += 1
                return True
            state.put(job)  # its lease, queue expiry and purge keys with it
            if moved.execution is not None:
                state.put_execution(job.job_id, _EXECUTION.decode(moved.execution))
            if moved.checkpoint is not None:
                state.put_checkpoint(job.job_id, _CHECKPOINT.decode(moved.checkpoint))
            self.received += 1
            return True
        if SETTLED_HEADER in headers:
            hear(state, self.layout_of(state), headers[SETTLED_HEADER], "status")
        return True  # a handover record without either header: nothing to fold

    def stray(self, state: StatusState, record: Record) -> Sequence[Output]:
        """The event forwarded to the partition its key belongs to under the live count,
        if that is not this one; nothing for an event at home (or with no key)."""
        forwarded = forward_stray(record, state.partition, self.counts)
        if forwarded is None:
            return ()
        self.forwarded += 1
        return [forwarded]


def _moved(state: StatusState, record: JobRecord) -> Moved:
    execution = state.get_execution(record.job_id)
    checkpoint = state.get_checkpoint(record.job_id)
    return Moved(
        record=record.encode(),
        execution=None if execution is None else _RUN.encode(execution),
        checkpoint=None if checkpoint is None else _RUN.encode(checkpoint),
    )


_RUN = msgspec.json.Encoder()
"""An execution or a checkpoint as the store keeps it (pipeline/status/state.py)."""
_EXECUTION = msgspec.json.Decoder(ExecutionRequested)
_CHECKPOINT = msgspec.json.Decoder(Checkpoint)
