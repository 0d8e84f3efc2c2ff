"""One job type's side of a worker: its consumer, buffers and offsets.

A lane is a member of the consumer group ``<prefix>jobstream.workers.<type>``, subscribed
to the type's three tiers ``jobs.exec.<type>.<high|normal|low>`` (in a worker started with
``--pool gpu``: ``...workers.<type>.pool-gpu`` and ``jobs.exec.<type>.pool-gpu.<tier>``).
Records wait in a buffer per tier until the loop has a free slot (its partitions served
in turn, pipeline/worker/buffer.py); the :class:`PriorityPolicy` decides which tier goes
next. The partitions of a full tier are paused (the consumer stays in its group, it just
fetches nothing more; a fetch already under way may add one more batch), and so is a
partition holding more than its share of the buffer (pipeline/worker/pauses.py). Every
tier is paused while draining. A record fetched before its due instant (fired ahead, or
this worker's clock behind the timers') waits apart until ``claim_ahead_ms`` before it
(pipeline/worker/early.py); then, if its instant is still more than ``launch_ahead_ms``
away, it goes to ``ahead``, to be claimed without waiting for a slot, else to its tier
buffer.

Its claims and outcomes commit in transactions with its offsets
(pipeline/worker/transactions.py, ``lane.tx``). Before a partition is revoked, and at the
end of a drain, the lane commits what it has whatever the schedule says.

A type with a fleet-wide concurrency limit (pipeline/concurrency.py) starts a record only
while its partition index has a free slot (:class:`PartitionSlots`), and before its
partitions are revoked it lets its runs end and reports them (``before_revoke``, at most
the worker's revoke timeout), so that their next owner starts nothing while they run.

A record whose job has a concurrency key (docs/keys.md) starts only while its key has
room among the runs of this worker (:class:`KeyedRuns`, shared by the lanes); otherwise
it is parked behind its key (:class:`ParkedRecords`), out of the tier buffer, so the
records of other keys go on; it starts when a run of its key ends, before new records.
A lane holding runs with a key waits for them before its partitions are revoked, as a
limited lane does (docs/adr/0008-concurrency-keys.md).

The lane builds no client: its consumer and producer come from the
:class:`~jobstream._pipeline.worker.ports.WorkerClients` it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from jobstream._pipeline.concurrency import ConcurrencyLimits
from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError
from jobstream._pipeline.kafka import clients as _kafka
from jobstream._pipeline.kafka.commit import is_fatal
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.model.records import ExecutionRequested
from jobstream._pipeline.runtime.schedule import CommitSchedule
from jobstream._pipeline.scheduling.fair_share import weight_of
from jobstream._pipeline.serde import AvroDeserializer
from jobstream._pipeline.topics import PRIORITIES, Topics, routed
from jobstream._pipeline.worker.buffer import TierBuffer
from jobstream._pipeline.worker.early import EarlyRecords
from jobstream._pipeline.worker.keyed import (
    ConcurrencyKey,
    KeyedRuns,
    ParkedRecords,
    concurrency_key,
)
from jobstream._pipeline.worker.offsets import OffsetRef, OffsetTracker, Partition
from jobstream._pipeline.worker.pauses import share, to_pause
from jobstream._pipeline.worker.ports import SYSTEM_CLOCK, Clock, WorkerClients
from jobstream._pipeline.worker.priorities import PriorityPolicy
from jobstream._pipeline.worker.slots import PartitionSlots
from jobstream._pipeline.worker.transactions import TIMEOUT_S, LaneTransactions

log = logging.getLogger(__name__)

_ERROR_LOG_INTERVAL_S = 10.0
CLAIM_GRACE_MS = 200
"""Outcomes wait at most this much longer than the commit interval for a claim to ride."""


@dataclass(slots=True)
class Record:
    """A fetched ExecutionRequested waiting for a slot."""

    ref: OffsetRef
    tier: str
    execution: ExecutionRequested
    raw: bytes | None
    """The record's value as fetched: STARTED reuses its bytes (see started.py)."""
    key: ConcurrencyKey | None = None
    """Its job's concurrency key, if any."""


def worker_group(prefix: str, route: str) -> str:
    """The consumer group of the workers of a route (a type, or a type in a pool)."""
    return f"{prefix}jobstream.workers.{route}"


def transactional_prefix(prefix: str, route: str) -> str:
    """What the transactional ids of a route's workers start with: no type has a ``-`` in
    its name, so no other route's ids start so."""
    return f"{prefix}jobstream.worker.{route}--"


class Lane:
    def __init__(self, settings: Settings, job_type: str, *, clients: WorkerClients,
                 worker_id: str, prefetch: int, static_member: bool = False,
                 pool: str | None = None, claim_ahead_ms: int = 0, launch_ahead_ms: int = 0,
                 in_burst: Callable[[], bool] = lambda: False,
                 deserialize: AvroDeserializer, schedule: CommitSchedule | None = None,
                 clock: Clock = SYSTEM_CLOCK, before_commit: Callable[[], object] = lambda: None,
                 before_revoke: Callable[[Lane], object] = lambda lane: None,
                 keyed: KeyedRuns | None = None) -> None:  # fmt: skip
        self.job_type = job_type
        topics = Topics(settings)
        self.tier_of = {topics.execution(job_type, tier, pool): tier for tier in PRIORITIES}
        self.prefetch = prefetch
        self._deserialize = deserialize
        self._clients, self._clock = clients, clock
        self._principal = settings.sasl_username
        self.slots = PartitionSlots(job_type, ConcurrencyLimits.of(settings))
        self._before_revoke = before_revoke
        """Runs before a limited lane's partitions are revoked: the loop waits there for
        the lane's runs to end."""
        self.keys: ParkedRecords[Record] = ParkedRecords(keyed or KeyedRuns())
        """Records parked behind their concurrency key; the key counts are the worker's."""
        self.key_runs = 0
        """Runs of this lane holding a concurrency key (kept by the runs in flight)."""
        self.closing = False
        prefix = settings.topic_prefix
        route = routed(job_type, pool)  # a pool's workers are a group of their own
        self.group = worker_group(prefix, route)
        transactional_id = f"{transactional_prefix(prefix, route)}{worker_id}"
        # A crashed worker's partitions move to the others after 6 s, not 45. The range
        # assignor splits each tier's partitions among the workers; cooperative-sticky
        # balances counts over the three tiers, and could leave a worker none of the one
        # that holds the jobs.
        self._membership: _kafka.KafkaConfig = {
            **_kafka.WORKER_FETCH, **_kafka.GROWN_PARTITIONS_SEEN,
            "session.timeout.ms": _kafka.SESSION_TIMEOUT_MS,
            "partition.assignment.strategy": "range",
        }  # fmt: skip
        if static_member:
            self._membership["group.instance.id"] = transactional_id
        self.consumer: Consumer = clients.consumer(self.group, self._membership)
        self.tracker = OffsetTracker()
        self.tx = LaneTransactions(
            job_type=job_type, transactional_id=transactional_id,
            topics=(topics.events, topics.results, topics.logs, topics.checkpoints,
                    topics.intake),
            new_producer=clients.transactional, consumer=lambda: self.consumer,
            tracker=self.tracker, schedule=schedule or CommitSchedule(), clock=clock,
            before_commit=before_commit, principal=settings.sasl_username,
        )  # fmt: skip
        self.policy = PriorityPolicy()
        self.buffers: dict[str, TierBuffer[Record]] = {tier: TierBuffer() for tier in PRIORITIES}
        weight = weight_of(settings.owner_weights)
        self.early: EarlyRecords[Record] = EarlyRecords(_owner, weight)
        """Records fetched before their due instant, until ``claim_ahead_ms`` before it (as
        they arrive while the worker holds a burst)."""
        self.early_keyed: EarlyRecords[Record] = EarlyRecords(_owner, weight)
        """Keyed records fetched before their instant, until ``launch_ahead_ms`` before it:
        a keyed record's claim holds its key, so it comes no sooner than its launch."""
        self.launch_ahead_ms = launch_ahead_ms
        self.claim_ahead_ms = launch_ahead_ms if self.slots.limited else claim_ahead_ms
        """A limited type's claims hold its limit's slots: they come no sooner than launches."""
        self._in_burst = in_burst
        """Whether the worker holds a burst (options.BURST_HELD): then records are claimed
        as they arrive, up to ``burst_claim_ms`` before their instant."""
        self.burst_claim_ms = settings.fire_lead_most
        self.ahead: EarlyRecords[Record] = EarlyRecords(_owner, weight)
        """Records whose claim has come more than ``launch_ahead_ms`` before their instant,
        by instant and owners in turn: the loop claims them without a slot (they take one
        at their launch)."""
        self.unreadable = 0
        self.run_s: float | None = None
        """A moving mean of how long this type's runs took, from launch to end."""
        self._paused: set[Partition] = set()
        self._full: frozenset[str] = frozenset()
        self._error_logged_at = 0.0

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        self.tx.start()
        self._subscribe()

    def _subscribe(self) -> None:
        self.consumer.subscribe(list(self.tier_of), on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_lost)  # fmt: skip

    def _rejoin(self, error: object) -> None:
        """After a fatal consumer error (a static member fenced by a registration of its own
        id, left over from a coordinator move): drop the partitions, whose uncommitted
        records go to their next owner, and join again with a new consumer."""
        log.warning("worker consumer replaced after: %s", error, extra={"job_type": self.job_type})
        self._forget([TopicPartition(t, p) for t, p in self.tracker.assigned()])
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError) as exc:  # fenced, or the broker is gone
            log.debug("consumer close: %s", exc)
        self.consumer = self._clients.consumer(self.group, self._membership)
        self._subscribe()

    def close(self) -> None:
        """Leave the group (the revoke callback commits first), then flush the producer.
        The runs still going were given up after the drain: the revocation does not wait
        for them."""
        self.closing = True
        self.consumer.close()
        self.tx.producer.flush(10)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in self._last_commits(consumer, partitions):
            self.tracker.assign(tp.topic, tp.partition, tp.offset, tp.metadata)
        # librdkafka keeps a partition paused through its revocation and a new assignment
        # to this consumer (an eager rebalance hands most back), while the lane forgot the
        # pause with the revocation: resumed here, or it would never fetch again.
        consumer.resume(partitions)

    def _last_commits(self, consumer: Consumer,
                      partitions: list[TopicPartition]) -> list[TopicPartition]:  # fmt: skip
        """The partitions' committed offsets, with the offsets done above them in the
        metadata (pipeline/worker/offsets.py); without them if they cannot be read: the
        records done out of order by the last owner would start again, flagged as
        duplicates by the status processor."""
        try:
            return consumer.committed(partitions, timeout=TIMEOUT_S)
        except KafkaException as exc:
            log.warning("committed offsets unreadable at assignment, records done out of "
                        "order by the last owner may start again: %s", exc,
                        extra={"job_type": self.job_type})  # fmt: skip
            return partitions

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if (self.slots.limited or self.key_runs) and not self.closing:
            self._before_revoke(self)
        try:
            self.commit(force=True)
        except KafkaException as exc:
            log.warning("commit before revocation failed: %s", exc)
        self._forget(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._forget(partitions)

    def _forget(self, partitions: list[TopicPartition]) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        for key in gone:
            self.tracker.revoke(*key)
        self._paused -= gone
        for buffer in self.buffers.values():
            buffer.forget(gone)
        self.early.forget(gone)
        self.early_keyed.forget(gone)
        self.ahead.forget(gone)
        self.keys.forget(gone)

    # -- records ------------------------------------------------------------------------

    def fetch(self, timeout_s: float) -> None:
        """Consume what has arrived into the tier buffers: at most one partition's share
        at a time, so that a partition holding its share is paused before it takes more."""
        most = share(self.prefetch, max(self._partitions_of().values(), default=1))
        messages = self.consumer.consume(most, timeout=timeout_s)
        now = self._clock.wall_ms()
        self.release_early(now)
        for message in messages:
            if message.error() is not None:
                self._consume_error(message)
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if topic is None or partition is None or offset is None:
                continue
            ref = self.tracker.fetched(topic, partition, offset)
            if ref is None:
                continue
            raw = message.value()
            try:
                event = self._deserialize(raw)
            except DeserializationError as exc:
                self._unreadable(ref, str(exc))
                continue
            if event.name != "ExecutionRequested":
                self._unreadable(ref, f"{event.name} does not belong on an execution topic")
                continue
            tier = self.tier_of[topic]
            self.slots.check_fetched(partition)
            record = Record(ref, tier, event.data, raw, concurrency_key(event.data))
            held, ahead_ms = ((self.early, self.claim_ahead_ms) if record.key is None
                              else (self.early_keyed, self.launch_ahead_ms))  # fmt: skip
            release = record.execution.scheduled_at_ms - ahead_ms
            if release > now:
                held.add(release, (topic, partition), record)
            else:
                self._place((topic, partition), record, now)

    def release_early(self, now: int) -> None:
        """Once the first record held before its time is to be claimed, release it with
        those due within a claim-ahead after it: they are claimed in one transaction, not
        one each. While the worker holds a burst, release what is held as it arrives."""
        if self.early and not self.slots.limited and self._in_burst():
            self._release(self.early, now, now + self.burst_claim_ms)
        else:
            self._release_due(self.early, now)
        self._release_due(self.early_keyed, now)

    def _release_due(self, held: EarlyRecords[Record], now: int) -> None:
        first = held.next_ms()
        if first is not None and first <= now:
            self._release(held, now, now + self.claim_ahead_ms)

    def _release(self, held: EarlyRecords[Record], now: int, until: int) -> None:
        for partition, record in held.due(until):
            self._place(partition, record, now)

    @property
    def held_early(self) -> int:
        """Records held before their time, keyed or not."""
        return len(self.early) + len(self.early_keyed)

    def next_release_ms(self) -> int | None:
        """When the first record held before its time is to be claimed, if any is held."""
        firsts = [ms for ms in (self.early.next_ms(), self.early_keyed.next_ms()) if ms is not None]
        return min(firsts, default=None)

    def _place(self, partition: Partition, record: Record, now: int) -> None:
        """A record whose claim has come: ahead of a slot while its launch is still to
        come, else in its tier buffer."""
        if (record.execution.scheduled_at_ms - now > self.launch_ahead_ms
                and not self.slots.limited and record.key is None):  # fmt: skip
            self.ahead.add(record.execution.scheduled_at_ms, partition, record)
        else:
            self.buffers[record.tier].append(partition, record, _size(record))

    def wait_for_slot(self, record: Record) -> None:
        """A record taken from ``ahead`` that must wait for a slot after all."""
        self.buffers[record.tier].append((record.ref.topic, record.ref.partition), record,
                                         _size(record))  # fmt: skip

    def pick(self) -> Record | None:
        """The next record to start: a parked record whose key has room now, else the next
        by the priority policy whose key (if any) has room, parking those whose key has
        none; with a concurrency limit, only from a partition index with a free slot."""
        ready = self._slot_free if self.slots.limited else None
        while True:
            if self.keys:
                parked = self.keys.pop_ready(ready)
                if parked is not None:
                    return parked
            record = self._pick_buffered()
            if record is None or record.key is None:
                return record
            if self.keys.admit(record.key, (record.ref.topic, record.ref.partition), record,
                               _size(record)):  # fmt: skip
                return record

    def readmit(self, record: Record) -> bool:
        """Whether a record picked earlier and held back since (a suspect waiting to run
        alone) may still start; if its key has no room now, it is parked first in line."""
        if record.key is None or self.keys.runs.room(record.key):
            return True
        self.keys.park_first(record.key, (record.ref.topic, record.ref.partition), record,
                             _size(record))  # fmt: skip
        return False

    def _pick_buffered(self) -> Record | None:
        if not self.slots.limited:
            tier = self.policy.pick([tier for tier, buffer in self.buffers.items() if buffer])
            return None if tier is None else self.buffers[tier].popleft(_size)
        heads = {tier: buffer.first(self._slot_free) for tier, buffer in self.buffers.items()}
        tier = self.policy.pick([tier for tier, head in heads.items() if head is not None])
        return None if tier is None else self.buffers[tier].popleft(_size, heads[tier])

    def holds(self, ref: OffsetRef) -> bool:
        """Whether the record ``ref`` still belongs to this lane (not revoked since)."""
        return self.tracker.current(ref)

    def _slot_free(self, partition: Partition) -> bool:
        return self.slots.free(partition[1])

    @property
    def waits_for_slot(self) -> bool:
        """Whether records are buffered (or parked) that only a free slot (or a run of
        their key ending) would let start."""
        if self.has_buffered:
            return False
        return bool(self.keys) or (self.slots.limited and any(self.buffers.values()))

    @property
    def has_buffered(self) -> bool:
        """Whether a buffered record could start now (with a limit: on a free slot), or
        a parked one whose key has room."""
        if not self.slots.limited:
            return any(self.buffers.values()) or (bool(self.keys) and self.keys.has_ready())
        return (any(buffer.first(self._slot_free) is not None for buffer in self.buffers.values())
                or (bool(self.keys) and self.keys.has_ready(self._slot_free)))  # fmt: skip

    @property
    def paused(self) -> frozenset[Partition]:
        return frozenset(self._paused)

    def buffered(self) -> dict[str, int]:
        counts = {tier: len(buffer) for tier, buffer in self.buffers.items()}
        if self.keys:
            counts["parked"] = len(self.keys)
        return counts

    def counters(self) -> dict[str, int]:
        """Transactions committed and aborted, producers replaced, records skipped."""
        return {**self.tx.counters(), "unreadable": self.unreadable}

    def update_pauses(self, fetching: bool) -> None:
        """Pause the partitions of full tiers and those holding more than their share of
        their tier's buffer (all of them unless ``fetching``)."""
        counts = self._partitions_of()
        self._full, wanted = to_pause(self.buffers, prefetch=self.prefetch, full=self._full,
                                      tier_of=self.tier_of, counts=counts,
                                      assigned=self.tracker.assigned(),
                                      paused=frozenset(self._paused),
                                      fetching=fetching)  # fmt: skip
        if self.keys and fetching:
            assigned = self.tracker.assigned()
            wanted |= self.keys.crowded(len(assigned), frozenset(self._paused)) & set(assigned)
        if wanted - self._paused:
            self.consumer.pause([TopicPartition(t, p) for t, p in wanted - self._paused])
        if self._paused - wanted:
            self.consumer.resume([TopicPartition(t, p) for t, p in self._paused - wanted])
        self._paused = wanted

    def _partitions_of(self) -> dict[str, int]:
        """Assigned partitions of each tier's topic."""
        counts = dict.fromkeys(self.tier_of, 0)
        for topic, _ in self.tracker.assigned():
            counts[topic] = counts.get(topic, 0) + 1
        return counts

    def _unreadable(self, ref: OffsetRef, reason: str) -> None:
        """No job can be named, so no outcome: skip the record, keep the reason in the log."""
        self.unreadable += 1
        self.tracker.done(ref)
        log.warning("unreadable execution record skipped", extra={
            "topic": ref.topic, "partition": ref.partition, "offset": ref.offset,
            "reason": reason})  # fmt: skip

    def _consume_error(self, message: Message) -> None:
        error = message.error()
        refused = denied(error, topic=message.topic() or ", ".join(self.tier_of),
                         group=self.group, operation="READ",
                         principal=self._principal)  # fmt: skip
        if refused is not None:  # no retry helps until someone grants it
            raise refused
        if is_fatal(error):
            self._rejoin(error)
            return
        now = self._clock.monotonic()
        if now - self._error_logged_at > _ERROR_LOG_INTERVAL_S:
            self._error_logged_at = now
            log.warning("consume error: %s", error, extra={"job_type": self.job_type})

    # -- transactions -------------------------------------------------------------------

    def commit(self, *, force: bool = False) -> bool:
        """Commit the pending outcomes with the watermarks when due (or ``force``)."""
        return self.tx.commit(force=force, grace_s=self._claim_grace_s())

    def commit_due(self) -> bool:
        """Whether :meth:`commit` would commit now, had it anything to commit."""
        return self.tx.due(self._claim_grace_s())

    def _claim_grace_s(self) -> float:
        """How much longer than the interval outcomes may wait for a claim: as long as a
        claim ahead, at most :data:`CLAIM_GRACE_MS`, when a record's claim comes within that
        time. Its transaction takes them, which spares one of their own between two claims
        (half of a busy lane's transactions: docs/benchmarks.md, "Transactions a second");
        a claim that does not come (a worker behind, a suspect running alone) delays them by
        that much at most, however far ahead the worker claims."""
        grace_ms = min(self.claim_ahead_ms, CLAIM_GRACE_MS)
        release = self.next_release_ms()
        if release is None or release - self._clock.wall_ms() > grace_ms:
            return 0.0
        return grace_ms / 1000


def _size(record: Record) -> int:
    return len(record.raw or b"")


def _owner(record: Record) -> str:
    return record.execution.spec.owner
