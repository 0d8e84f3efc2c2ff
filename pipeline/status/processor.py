"""``jobstream status-processor``: the status processor on the processor runtime.

One consumer in the status group reads jobs.events. Partition p owns one RocksDB store
and partition p of ``jobs.status``, the store's changelog, co-partitioned with jobs.events
(docs/adr/0014-jobs-status-is-the-status-changelog.md). One Kafka transaction spans the
loop iterations of up to ``commit_interval_ms`` (or ``commit_max_records``): the events
consumed, the leases expired on the wall clock, the jobs.status records, the LOST and
DUPLICATE events and the input offsets commit together, and the stores are written only
after the commit (ADR 0001).

Each transaction costs the broker a marker on every partition it wrote, and every job's
status is written once per transaction however many of its events it holds (the store's
last change of each job): fewer, larger transactions are what let the broker keep up, for
statuses later by up to the interval. A transaction holding a StepEnded is the exception:
the children of a workflow wait for it, so it commits at the end of the loop iteration
that made it (an urgent output, pipeline/runtime/schedule.py).

Leases (and QUEUED attempts' expiries) expire only on a partition read to its end
(librdkafka's partition EOF): while a backlog is being read (after a restart, under load)
the heartbeats (and STARTEDs) in it have not been seen yet, and expiring then would declare
healthy runs lost.

When jobs.events grows (``jobstream topics grow --events-partitions``), each old partition
hands the jobs whose key now falls elsewhere to their new home over jobs.status.handover,
the processor's second input, and a new partition reads no jobs.events until every
partition that may send to it has settled (pipeline/status/handover.py). A partition in a
grow expires nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from jobstream._pipeline import clock
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError
from jobstream._pipeline.growth.strays import is_forwarded
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.runtime import Output, Processor, Record, RunnerOptions
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status.handover import StatusHandover
from jobstream._pipeline.status.logic import StatusLogic, StatusPolicy
from jobstream._pipeline.status.state import RecordCache, StatusState
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

STATUS_OPTIONS = RunnerOptions(poll_ms=20, commit_interval_ms=500, commit_max_records=10_000,
                               punctuate_limit=6000)  # fmt: skip
"""Transactions of up to 500 ms (or 10,000 records), but at once for one that holds a
StepEnded (the broker's cost follows transactions a second more than jobs: at 1,200
jobs/s, 500 ms rather than 100 kept the pipeline up with its load on two cores,
docs/benchmarks.md, "Transactions a second"); a 20 ms poll (``consume()`` waits that long
unless a batch fills), so that a workflow's release is not held longer here than at the
timers; up to 6,000 leases expired (and as many records purged) per iteration."""

METADATA_REFRESH_MS = 1_000
"""How soon the status processors see jobs.events grown while they run (librdkafka's
default refresh is 5 minutes)."""

CACHED_RECORDS = 10_000
"""Committed job records kept decoded per partition between transactions (a job's events
usually span a few): about 1 KB each."""


class StatusProcessor(Processor[StatusState]):
    name = "status"
    state_layout = 2
    """2: restored from jobs.status (docs/adr/0014-jobs-status-is-the-status-changelog.md);
    stores of layout 1, restored from jobs.status.changelog, are rebuilt."""
    punctuate_when_caught_up = True
    consumer_tuning: ClassVar[clients.KafkaConfig] = {
        "partition.assignment.strategy": "range",
        **clients.PROMPT_FETCH,
        # A grow of jobs.events is noticed (and the group rebalanced) within a second.
        "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS,
    }

    def __init__(self, settings: Settings, policy: StatusPolicy | None = None,
                 cached_records: int = CACHED_RECORDS) -> None:  # fmt: skip
        topics = Topics(settings)
        self.inputs = (topics.events, topics.status_handover)
        self.changelog = topics.status
        self.events = topics.events
        self.handover = StatusHandover(topics.status_handover, topics.events,
                                       settings.events_partitions)
        """This process's part in a grow of jobs.events (pipeline/status/handover.py)."""
        self.owned: set[int] = set()
        self.logic = StatusLogic(topics, policy)
        _, self.deserialize = make_serde(settings.schema_registry_url)
        self.cached_records = cached_records
        self.counts = Counters("malformed", "foreign", "statuses", "restored_bare")
        """``malformed``: records on jobs.events that are not Avro events, skipped (and
        logged); ``foreign``: valid events that are not JobLifecycle, not the status
        processor's business; ``statuses``: jobs.status records committed;
        ``restored_bare``: jobs.status records restored without their internal fields
        (written before jobs.status carried them,
        docs/adr/0014-jobs-status-is-the-status-changelog.md)."""
        self._caches: dict[int, RecordCache] = {}
        self._unrenewed: set[int] = set()
        """Partitions taken in whose leases have not been renewed by a committed
        transaction yet: a heartbeat changes the store alone, so a store kept from its
        files (or restored from jobs.status) may hold leases older than the heartbeats
        another process read (docs/adr/0014-jobs-status-is-the-status-changelog.md).
        Each running job gets a full lease from the assignment."""

    def open(self, tx: PartitionBatch | None, partition: int) -> StatusState:
        assert tx is not None
        cache = self._caches.get(partition)
        if cache is None:
            cache = self._caches[partition] = RecordCache(self.cached_records)
        state = StatusState(tx, partition, cache)
        if partition not in self.owned:
            self.owned.add(partition)
            self.handover.layouts[partition] = self.handover.layout_of(state)
            self._unrenewed.add(partition)
        if partition in self._unrenewed:
            state.renew_leases(clock.now_ms() + self.logic.policy.lease_ms)
        return state

    def inputs_counted(self, counts: Mapping[str, int]) -> None:
        self.handover.counts = dict(counts)

    def held_inputs(self) -> set[tuple[str, int]]:
        """jobs.events of each partition that waits for jobs handed over to it: an event
        of a job not moved in yet would start a record of its own."""
        return {(self.events, p) for p in self.owned if self.handover.waiting(p)}

    def restore(self, tx: PartitionBatch, key: bytes, value: bytes | None,
                headers: Headers = None) -> None:  # fmt: skip
        whole = StatusState(tx).restore(key, value, headers, now_ms=clock.now_ms(),
                                        lease_ms=self.logic.policy.lease_ms)  # fmt: skip
        if not whole:
            self.counts.restored_bare += 1
            if self.counts.restored_bare == 1:
                log.warning("jobs.status holds records without the status processor's "
                            "internal fields (written before it carried them): restored "
                            "with their defaults",
                            extra={"job_id": key.decode(errors="replace")})  # fmt: skip

    def process(self, state: StatusState, record: Record, now_ms: int) -> Iterable[Output]:
        if self.handover.receive(state, record):
            return ()
        forwarded = self.handover.stray(state, record)
        if forwarded:
            return forwarded
        try:
            event = self.deserialize(record.value())
        except DeserializationError as exc:
            self.counts.malformed += 1
            log.warning("jobs.events record skipped", extra={"reason": str(exc),
                        "partition": record.partition(), "offset": record.offset()})  # fmt: skip
            return ()
        if event.name != "JobLifecycle":
            self.counts.foreign += 1
            return ()
        return self.logic.process(state, event.data, now_ms, forwarded=is_forwarded(record))

    def punctuate(self, state: StatusState, now_ms: int, limit: int) -> Iterable[Output]:
        handed = self.handover.lay_out(state)
        if self.handover.busy(state.partition):
            return handed
        expired = self.logic.expire_leases(state, now_ms, limit)
        expired += self.logic.expire_queued(state, now_ms, limit)
        self.logic.purge(state, now_ms, limit)
        return handed + expired

    def punctuate_behind(self, state: StatusState, now_ms: int, limit: int) -> Iterable[Output]:
        return self.handover.lay_out(state)  # a backlog does not hold a handover back

    def committed(self, state: StatusState, outputs: Sequence[Output]) -> None:
        state.committed()
        self._unrenewed.discard(state.partition)
        if state.partition in self.owned:
            self.handover.layouts[state.partition] = self.handover.layout_of(state)
        self.counts.statuses += state.statuses

    def revoked(self, partition: int) -> None:
        self._caches.pop(partition, None)  # its next owner changes its records
        self.owned.discard(partition)
        self._unrenewed.discard(partition)
        self.handover.layouts.pop(partition, None)
        self.handover.cursors.pop(partition, None)

    def counters(self) -> Mapping[str, object]:
        handover = self.handover
        return {**self.counts.snapshot(), **self.logic.counters.snapshot(),
                "handed_over": handover.moved, "taken_over": handover.received,
                "kept_over": handover.kept, "forwarded": handover.forwarded}  # fmt: skip


def status_runner(settings: Settings, options: RunnerOptions = STATUS_OPTIONS,
                  policy: StatusPolicy | None = None) -> Runner[StatusState]:  # fmt: skip
    return Runner(StatusProcessor(settings, policy), settings, options)
