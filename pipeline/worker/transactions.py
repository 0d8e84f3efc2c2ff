"""One lane's transactions: its claims and outcomes, committed with its offsets.

Final outcomes of the type's executions (with their results, for jobs.results, their
runs' log lines, for jobs.logs, their checkpoints, for jobs.checkpoints, and the children
their handlers spawned, for jobs.intake) and the group's offsets commit in transactions
(transactional id ``<prefix>jobstream.worker.<type>--<worker id>``: the type first, so an
ACL can grant a type's workers its ids alone, ops/kafka/acls.py), with the offsets of
:class:`OffsetTracker` (watermarks: a record is done once started, or once settled
without a run; the offsets done above a watermark go in its commit's metadata, read back
by the partition's next owner at its assignment). The loop claims the records it starts
(:meth:`LaneTransactions.claim`: a transaction at once, before their handlers run);
otherwise one transaction carries every outcome decided since the previous one:
:class:`CommitSchedule` says when the next is due (by default 100 ms after the previous,
or at 1,000 outcomes; up to a claim ahead later when a claim ahead is to come by then,
whose transaction takes them: the lane's ``claim_grace_s``). A failed transaction is
aborted and its outcomes are kept for the next one; nothing is rewound, because no record
needs consuming again.

The producer comes from a factory, so the same bookkeeping runs against an in-memory
stand-in in tests (pipeline/worker/memory.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from jobstream._pipeline import metrics
from jobstream._pipeline.kafka.commit import (
    KAFKA_FAILURES,
    commit_offsets,
    is_fatal,
    kafka_error_of,
    send,
)
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.runtime.schedule import CommitSchedule
from jobstream._pipeline.worker.offsets import OffsetTracker
from jobstream._pipeline.worker.ports import Clock

log = logging.getLogger(__name__)

RESULT_BATCH_BYTES = 16 * 1024 * 1024
"""Results and logs waiting past this many bytes make the lane's next transaction due at once: a
transaction of a thousand 1 MB results would take the producer's memory and the broker
many seconds."""
_MAX_RETRY_DELAY_S = 5.0
TIMEOUT_S = 30.0
"""The longest one blocking transactional call (start, abort) may take."""

Headers = list[tuple[str, bytes]]


class LaneTransactions:
    def __init__(self, *, job_type: str, transactional_id: str,
                 topics: tuple[str, str, str, str, str],
                 new_producer: Callable[[str], Producer], consumer: Callable[[], Consumer],
                 tracker: OffsetTracker, schedule: CommitSchedule, clock: Clock,
                 before_commit: Callable[[], object], principal: str | None) -> None:  # fmt: skip
        self.job_type = job_type
        self.transactional_id = transactional_id
        (self.events_topic, self.results_topic, self.logs_topic, self.checkpoints_topic,
         self.intake_topic) = topics
        self._new_producer = new_producer
        self._consumer = consumer
        """The lane's consumer of the moment (a fenced one is replaced): its group's
        metadata goes with the offsets."""
        self.tracker, self.schedule, self._clock = tracker, schedule, clock
        self._before_commit = before_commit
        """Runs before outcomes are produced: the loop flushes HEARTBEAT records there."""
        self._principal = principal
        self.producer = new_producer(transactional_id)
        self.pending: list[tuple[bytes, bytes]] = []
        """Serialized outcomes (key, value) waiting for the next transaction."""
        self.results: list[tuple[bytes, bytes, Headers]] = []
        """Results of the runs whose SUCCEEDED waits in ``pending`` (key, value, headers),
        for jobs.results in the same transaction."""
        self.logs: list[tuple[bytes, bytes, Headers]] = []
        """Log lines of the runs whose outcome waits in ``pending``, for jobs.logs."""
        self.checkpoints: list[tuple[bytes, bytes | None]] = []
        """Checkpoints of the runs whose HEARTBEAT carrying them waits in ``pending``, and
        tombstones of the jobs whose SUCCEEDED does, for jobs.checkpoints (key: job id)."""
        self.spawned: list[tuple[bytes, bytes]] = []
        """Children the runs spawned (key, JobSubmitted), for jobs.intake."""
        self._results_bytes = 0
        self.transactions = self.aborted = self.renewed = 0
        self.commit_s: float | None = None
        """A moving mean of how long a transaction took, from its start to its commit: a
        claim's round trip."""
        self._retry_at = 0.0
        self._retry_delay = 0.1
        self._uninitialised = False

    def start(self) -> None:
        try:
            self.producer.init_transactions(TIMEOUT_S)
        except KafkaException as exc:
            refused = denied(exc.args[0], transactional_id=self.transactional_id,
                             principal=self._principal)  # fmt: skip
            if refused is not None:
                raise refused from exc
            raise

    def commit(self, *, force: bool = False, grace_s: float = 0.0) -> bool:
        """Commit the pending outcomes with the watermarks when the schedule says so (or
        ``force``); whether a transaction committed."""
        now = self._clock.monotonic()
        waiting = len(self.pending) + len(self.spawned)
        if not force and not self.due(grace_s):
            return False
        offsets = self.tracker.to_commit()
        if not waiting and not offsets and not self.checkpoints:
            return False
        if self.pending:
            self._before_commit()
        try:
            if self._uninitialised:
                self.producer.init_transactions(TIMEOUT_S)
                self._uninitialised = False
            self.producer.begin_transaction()
            for key, value in self.pending:
                send(self.producer, self.events_topic, value, key)
            for key, value, headers in self.results:
                send(self.producer, self.results_topic, value, key, headers=headers)
            for key, value, headers in self.logs:
                send(self.producer, self.logs_topic, value, key, headers=headers)
            for key, saved in self.checkpoints:
                send(self.producer, self.checkpoints_topic, saved, key)
            for key, value in self.spawned:
                send(self.producer, self.intake_topic, value, key)
            commit_offsets(self.producer, self._consumer(),
                           [TopicPartition(t, p, mark.offset, metadata=mark.metadata)
                            for (t, p), mark in offsets.items()])  # fmt: skip
        except KAFKA_FAILURES as failure:
            exc = kafka_error_of(failure)
            if exc is None:
                raise
            self._abort(exc)
            return False
        self.tracker.committed(offsets)
        self.pending.clear()
        self.results.clear()
        self.logs.clear()
        self.checkpoints.clear()
        self.spawned.clear()
        self._results_bytes = 0
        self.schedule.committed(now)
        self.transactions += 1
        took = self._clock.monotonic() - now
        self.commit_s = moving_mean(self.commit_s, took)
        metrics.COMMIT_SECONDS.labels("worker").observe(took)
        metrics.TRANSACTIONS.labels("worker").inc()
        self._retry_at, self._retry_delay = 0.0, 0.1
        return True

    def due(self, grace_s: float = 0.0) -> bool:
        """Whether the schedule says to commit now (not during a failed one's backoff)."""
        now = self._clock.monotonic()
        waiting = len(self.pending) + len(self.spawned)
        return now >= self._retry_at and self.schedule.due(now, waiting, grace_s)

    def claim(self) -> None:
        """Commit the STARTED records of the runs just started with their offsets (and any
        outcomes waiting), so that Kafka hands none of them out again. After a failed
        transaction, not before the lane's backoff."""
        if self._clock.monotonic() >= self._retry_at:
            self.commit(force=True)

    def add_result(self, key: bytes, value: bytes, headers: Headers) -> None:
        """A run's result, for jobs.results in the transaction of its SUCCEEDED."""
        self.results.append((key, value, headers))
        self._grew(len(value))

    def add_log(self, key: bytes, value: bytes, headers: Headers) -> None:
        """A run's log lines, for jobs.logs in the transaction of its outcome."""
        self.logs.append((key, value, headers))
        self._grew(len(value))

    def add_checkpoint(self, key: bytes, value: bytes | None) -> None:
        """A job's checkpoint (None: its tombstone), for jobs.checkpoints in the next
        transaction, which is due at once: the checkpoint is worth only once it is kept."""
        self.checkpoints.append((key, value))
    def add_spawned(self, key: bytes, value: bytes) -> None:
        """A child a run spawned, for jobs.intake in the next transaction, which it hurries:
        the workflow's steps wait on it."""
        self.spawned.append((key, value))
        self.schedule.hurry()

    def _grew(self, size: int) -> None:
        self._results_bytes += size
        if self._results_bytes >= RESULT_BATCH_BYTES:
            self.schedule.hurry()

    def holds_pending(self, record: tuple[bytes, bytes]) -> bool:
        """Whether ``record`` (this very entry) still waits for a transaction."""
        return any(entry is record for entry in self.pending)

    def drop_pending(self, record: tuple[bytes, bytes]) -> None:
        self.pending = [entry for entry in self.pending if entry is not record]

    def counters(self) -> dict[str, int]:
        return {"transactions": self.transactions, "aborted": self.aborted,
                "renewed": self.renewed}  # fmt: skip

    def _abort(self, exc: KafkaException) -> None:
        """Abort the transaction; the pending outcomes go in the next one. A producer that
        cannot abort (fenced, fatal, in a state it cannot leave) is replaced by a new one,
        whose start fences whatever the old one left open."""
        log.warning("worker transaction aborted, its outcomes will be produced again: %s", exc,
                    extra={"job_type": self.job_type})  # fmt: skip
        self.aborted += 1
        metrics.ABORTED.labels("worker").inc()
        self._retry_at = self._clock.monotonic() + self._retry_delay
        self._retry_delay = min(self._retry_delay * 2, _MAX_RETRY_DELAY_S)
        if not is_fatal(exc.args[0] if exc.args else None):
            if self._uninitialised:
                return  # a new producer that could not fence in yet (no coordinator): later
            try:
                self.producer.abort_transaction(TIMEOUT_S)
                return
            except KafkaException as again:
                exc = again
        log.warning("worker producer replaced after: %s", exc, extra={"job_type": self.job_type})
        self.renewed += 1
        self.producer.purge()
        self.producer = self._new_producer(self.transactional_id)
        # Its init_transactions (which fences the old one) runs before its first
        # transaction, retried with the commit's backoff while the coordinator is away.
        self._uninitialised = True


def moving_mean(mean: float | None, sample: float) -> float:
    """An exponential moving mean that gives a new sample a fifth of the weight (``None``:
    no sample yet)."""
    return sample if mean is None else 0.8 * mean + 0.2 * sample
