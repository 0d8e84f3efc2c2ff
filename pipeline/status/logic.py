"""Where a job's status is decided: events fold into records, leases expire into LOST.

A job of a workflow that ends (SUCCEEDED, DEAD_LETTERED, CANCELLED) is also announced to
the timers of its workflow as a StepEnded command on jobs.intake, so that they release or
cancel its children (docs/workflows.md). A job that ran under a singleton key (it carries
the ``jobstream.singleton`` label) that ends is announced the same way, as a SingletonEnded
keyed by its key, to the timers holding the key (docs/keys.md).

Pure over a :class:`StatusState` (one partition's store within one transaction), like the
timers' logic: every call returns the records to produce, and the runner carries them,
the store's changes (jobs.status, the store's changelog: each job's status is its
record there) and the input offsets in one Kafka transaction. The clock is an argument,
so tests drive leases with a clock of their own.

A lease is processing time: it runs from when this processor read the STARTED or the
last HEARTBEAT, not from the worker's clock, so clock skew between hosts cannot expire
it early. An expired lease emits LOST (with the execution and the latest checkpoint a
HEARTBEAT carried, for the retry router) and fences the execution at once (a late
heartbeat or outcome of it is a duplicate); the state moves to FAILED_RETRYING when the
LOST is read back from jobs.events, so that replaying jobs.events rebuilds exactly the
statuses that were written.

A QUEUED attempt of a job with a queue limit or a deadline holds an expiry the same way
(pipeline/model/deadlines.py): from when this processor read its FIRED (or its due
instant, for a run fired ahead), and dropped when the job leaves QUEUED. Past it, no
worker took the attempt: EXPIRED (naming the job type and pool) is emitted and fences the
execution at once, so a worker's STARTED read after it is a duplicate; the state moves
when the EXPIRED is read back, as with LOST.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from jobstream._pipeline.model.collapse import singleton_ended
from jobstream._pipeline.model.deadlines import queued_expiry_ms, queued_refusal
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.lifecycle import (
    LEASE_EXPIRED,
    TERMINAL_STATES,
    JobState,
    LifecycleKind,
)
from jobstream._pipeline.model.records import (
    Checkpoint,
    ErrorInfo,
    Event,
    ExecutionRequested,
    JobLifecycle,
    StepEnded,
    StepOutcome,
    lifecycle,
)
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.status.machine import Verdict, execution_id_of, transition
from jobstream._pipeline.status.state import JobRecord, StatusState
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

_DAY_MS = 24 * 3600 * 1000
_LEASED = frozenset({LifecycleKind.STARTED, LifecycleKind.HEARTBEAT})
"""What a RUNNING job's run reports to take or renew its lease."""
_STEP_OUTCOMES = {JobState.SUCCEEDED: StepOutcome.SUCCEEDED,
                  JobState.DEAD_LETTERED: StepOutcome.DEAD_LETTERED,
                  JobState.CANCELLED: StepOutcome.CANCELLED,
                  JobState.EXPIRED: StepOutcome.EXPIRED}  # fmt: skip
"""How a job of a workflow ended, by its finished state (:data:`TERMINAL_STATES`)."""


@dataclass(frozen=True)
class StatusPolicy:
    lease_ms: int = 30_000
    """A RUNNING job without a heartbeat for this long is declared lost (heartbeat: 10 s)."""
    retention_ms: int = 7 * _DAY_MS
    """How long a finished job's record stays to fence late outcomes; the same as the
    timers keep an idempotency key, so a key reused after that starts a fresh record."""

    def __post_init__(self) -> None:
        if self.lease_ms <= 0 or self.retention_ms <= 0:
            raise ValueError("lease_ms and retention_ms must be positive")


class StatusCounters(Counters):
    """What the processor decided, for the periodic stats line; ``steps_ended`` counts the
    StepEnded commands sent to the timers (jobs of workflows that ended); ``late``, events
    a grow of jobs.events forwarded that came after newer ones (not applied, not reported
    as duplicates)."""

    def __init__(self) -> None:
        super().__init__("applied", "illegal", "duplicates", "lost", "expired", "ignored",
                         "purged", "steps_ended", "late")  # fmt: skip
        self.illegal_by_transition: Counter[str] = Counter()
        """Rejections by "STATE + KIND": which component breaks the contract, and how."""


class StatusLogic:
    """The status processor's decisions (pipeline/status/processor.py carries them)."""

    def __init__(self, topics: Topics, policy: StatusPolicy | None = None) -> None:
        self.topics = topics
        self.policy = policy or StatusPolicy()
        self.counters = StatusCounters()

    def process(self, state: StatusState, event: JobLifecycle, now_ms: int, *,
                forwarded: bool = False) -> list[Output]:  # fmt: skip
        """Fold one JobLifecycle into its job; return what to produce.

        A ``forwarded`` event (a grow's copy of one written to the partition its job had
        before, docs/adr/0013-events-partitions-that-grow.md) took a detour: newer events
        of its job, written straight to this partition, may have come first. One the
        machine then finds stale is not applied, as any duplicate, but counted ``late``
        rather than reported: the second run a DUPLICATE names did not happen."""
        before = state.get(event.job_id)
        decision = transition(before, event)
        if decision.verdict is Verdict.ILLEGAL:
            self.counters.illegal += 1
            self.counters.illegal_by_transition[decision.reason] += 1
            return []
        if decision.verdict is Verdict.IGNORED:
            self.counters.ignored += 1
            return []
        if decision.verdict is Verdict.DUPLICATE:
            assert before is not None  # only an outcome for a job known is a duplicate
            if forwarded:
                self.counters.late += 1
                log.info("a forwarded event came after newer ones: not applied",
                         extra={"job_id": event.job_id, "kind": str(event.kind),
                                "reason": decision.reason})  # fmt: skip
                return []
            self.counters.duplicates += 1
            return [self._duplicate(state, before, event, decision.reason, now_ms)]
        record = decision.record
        assert record is not None  # APPLIED always carries the new record
        self.counters.applied += 1
        changed = before is None or record.public() != before.public()
        finished = record.state in TERMINAL_STATES
        after = record.evolve(
            lease_deadline_ms=self._lease(state, before, record, event, now_ms),
            queue_expiry_ms=_queue_expiry(record, event, now_ms),
            purge_at_ms=now_ms + self.policy.retention_ms if finished else None,
            updated_at_ms=now_ms if changed else record.updated_at_ms,
        )
        state.put(after)
        outputs = []
        if decision.rerun_of is not None:
            assert before is not None  # a rerun of the execution the job runs
            self.counters.duplicates += 1
            outputs.append(self._duplicate(state, before, event, decision.reason, now_ms,
                                           applied=True))  # fmt: skip
        if (
            finished
            and after.workflow_id
            and (before is None or before.state not in TERMINAL_STATES)
        ):
            outputs.append(self._step_ended(after, event))
        singleton = (after.labels or {}).get(SINGLETON_LABEL) if finished else None
        if singleton is not None and (before is None or before.state not in TERMINAL_STATES):
            outputs.append(self._singleton_ended(after, singleton, event))
        return outputs  # the job's jobs.status record is the store's (StatusState.flush)

    def expire_leases(self, state: StatusState, now_ms: int, limit: int = 1000) -> list[Output]:
        """Declare lost every RUNNING job whose lease ended at or before ``now_ms``."""
        emits = []
        for record in state.expired_leases(now_ms, limit):
            if record.state is not JobState.RUNNING:  # cannot happen: leases end with the run
                state.put(record.evolve(lease_deadline_ms=None))
                continue
            execution = state.get_execution(record.job_id)
            checkpoint = state.get_checkpoint(record.job_id)
            state.put(record.evolve(lease_deadline_ms=None,
                                    finished=record.finish(record.execution_id)))  # fmt: skip
            state.delete_execution(record.job_id)
            self.counters.lost += 1
            emits.append(self._lost(state, record, execution, checkpoint, now_ms))
        return emits

    def expire_queued(self, state: StatusState, now_ms: int, limit: int = 1000) -> list[Output]:
        """Expire every QUEUED attempt no worker started before its expiry at ``now_ms``."""
        emits = []
        for record in state.expired_queued(now_ms, limit):
            if record.state is not JobState.QUEUED:  # cannot happen: it ends with QUEUED
                state.put(record.evolve(queue_expiry_ms=None))
                continue
            state.put(record.evolve(queue_expiry_ms=None,
                                    finished=record.finish(record.execution_id)))  # fmt: skip
            expiry = queued_refusal(record.deadline_ms, record.queue_limit_ms,
                                    job_type=record.job_type, pool=record.pool,
                                    attempt=record.attempt, now_ms=now_ms)  # fmt: skip
            self.counters.expired += 1
            emits.append(self._back(state, lifecycle(
                LifecycleKind.EXPIRED, record, at_ms=now_ms, attempt=record.attempt,
                epoch=record.epoch, execution_id=record.execution_id, detail=expiry.message,
                error=expiry.error(attempt=record.attempt, at_ms=now_ms),
            )))  # fmt: skip
        return emits

    def purge(self, state: StatusState, now_ms: int, limit: int = 1000) -> int:
        """Drop the records of jobs finished longer than the retention, and with them their
        jobs.status records (a tombstone each)."""
        purged = state.purgeable(now_ms, limit)
        for record in purged:
            state.remove(record.job_id)
        self.counters.purged += len(purged)
        return len(purged)

    # -- helpers -------------------------------------------------------------------------

    def _lease(self, state: StatusState, before: JobRecord | None, after: JobRecord,
               event: JobLifecycle, now_ms: int) -> int | None:  # fmt: skip
        """The lease deadline after ``event``: taken or renewed by the run, or dropped (with
        the run's execution and checkpoint) when it ends."""
        kind = event.kind
        if after.state is JobState.RUNNING and kind in _LEASED:
            if event.execution is not None and kind == LifecycleKind.STARTED:
                state.put_execution(after.job_id, event.execution)
            elif event.checkpoint is not None and kind == LifecycleKind.HEARTBEAT:
                state.put_checkpoint(after.job_id, event.checkpoint)  # for a LOST to carry
            return now_ms + self.policy.lease_ms
        if after.state is not JobState.RUNNING:
            if before is not None and before.state is JobState.RUNNING:
                state.delete_execution(after.job_id)
            return None
        return after.lease_deadline_ms

    def _back(self, state: StatusState, event: JobLifecycle) -> Output:
        """``event`` back to the job's own partition of jobs.events."""
        return Output(self.topics.events, partition_key(event.job_id, event.workflow_id),
                      Event.of(event), partition=state.partition)  # fmt: skip

    def _duplicate(self, state: StatusState, record: JobRecord, event: JobLifecycle,
                   reason: str, now_ms: int, *, applied: bool = False) -> Output:  # fmt: skip
        """A DUPLICATE naming the second run: not applied (a zombie's, a finished
        execution's), or applied as the live run of an execution started before."""
        worker = event.worker_id
        verdict = "applied, but" if applied else "not applied:"
        return self._back(state, lifecycle(
            LifecycleKind.DUPLICATE, record, at_ms=now_ms,
            job_type=event.job_type or record.job_type, owner=event.owner or record.owner,
            attempt=event.attempt or 0, epoch=event.epoch or 0,
            execution_id=execution_id_of(event), worker_id=worker,
            detail=f"{event.kind} from {worker or 'an unknown worker'} {verdict} {reason}",
        ))  # fmt: skip

    def _step_ended(self, record: JobRecord, event: JobLifecycle) -> Output:
        """StepEnded to the workflow's partition of jobs.intake: the timers there hold its
        children. In the same transaction as the status that ends the job, so it is sent
        once; a replay of jobs.events may send it again, which the timers ignore. Urgent:
        the children wait for it, so its transaction commits without waiting for the
        interval."""
        assert record.workflow_id is not None
        succeeded = record.state is JobState.SUCCEEDED
        ended = StepEnded(
            job_id=record.job_id, workflow_id=record.workflow_id, owner=record.owner,
            outcome=_STEP_OUTCOMES[record.state], ended_at_ms=event.at_ms,
            result=record.result if succeeded else None,
            result_uri=record.result_uri if succeeded else None, detail=event.detail,
        )  # fmt: skip
        self.counters.steps_ended += 1
        return Output(self.topics.intake, partition_key(record.job_id, record.workflow_id),
                      Event.of(ended), urgent=True)  # fmt: skip

    def _singleton_ended(self, record: JobRecord, key: str, event: JobLifecycle) -> Output:
        """SingletonEnded to the partition of jobs.intake that holds the job's singleton
        key (its timers let the job waiting behind it run): sent once, as a StepEnded is,
        a replay's second one ignored there. Only a job its key's timers let through
        carries :data:`SINGLETON_LABEL`."""
        return Output(self.topics.intake, *singleton_ended(
            record.job_id, record.owner, key, str(record.state), event.at_ms), urgent=True)

    def _lost(self, state: StatusState, record: JobRecord, execution: ExecutionRequested | None,
              checkpoint: Checkpoint | None, now_ms: int) -> Output:  # fmt: skip
        worker = record.worker_id or "an unknown worker"
        message = f"no heartbeat from {worker} for {self.policy.lease_ms / 1000:g} s"
        error = ErrorInfo(attempt=record.attempt, error_type=LEASE_EXPIRED, message=message,
                          at_ms=now_ms, worker_id=record.worker_id)  # fmt: skip
        return self._back(state, lifecycle(
            LifecycleKind.LOST, record, at_ms=now_ms, attempt=record.attempt,
            epoch=record.epoch, execution_id=record.execution_id, worker_id=record.worker_id,
            error=error, detail=f"lease expired: {message}", execution=execution,
            checkpoint=checkpoint,
        ))  # fmt: skip


def _queue_expiry(after: JobRecord, event: JobLifecycle, now_ms: int) -> int | None:
    """The QUEUED attempt's expiry after ``event``: set by its FIRED, kept while it stays
    QUEUED, dropped when it leaves."""
    if after.state is not JobState.QUEUED:
        return None
    if event.kind == LifecycleKind.FIRED:
        return queued_expiry_ms(after.deadline_ms, after.queue_limit_ms, queued_at_ms=now_ms,
                                due_ms=event.scheduled_at_ms)  # fmt: skip
    return after.queue_expiry_ms
