"""The retry router's processing step: one failure in, the records that route it out.

Pure over events, like the timers' logic (pipeline/timers/logic.py):
:meth:`RetryRouter.route` turns a FAILED, TIMED_OUT or LOST JobLifecycle into either

- a RetryScheduled on jobs.retry (the timers fire it at ``retry_at_ms``, so a retry is as
  punctual as any firing) and a RETRY_SCHEDULED JobLifecycle on jobs.events, or
- a DeadLettered on ``jobs.dlq.<type>`` and a DEAD_LETTERED JobLifecycle, or
- an EXPIRED JobLifecycle alone, when the retry would start at or past the job's deadline
  (pipeline/model/deadlines.py). Not the dead-letter topic: a record there is for a
  redrive once the cause is fixed, and a redrive of a job past its deadline would only
  expire again at the timers. The EXPIRED's error says the deadline, and which failure
  asked for the retry,

and the runner commits both records of a pair with the input offset in one transaction,
at the end of the loop iteration that routed it (both are urgent outputs: a retry's time
or a workflow's release may be near).
Every record is keyed by the job's partition key, so the retry lands on the jobs.retry
partition that holds the job's own timers (a cancel finds both) and the history of a job
stays in order on jobs.events.

The router needs nothing but the event: the failed ``execution`` travels in it (spec,
attempt, earlier errors, idempotency key). An event without one cannot be routed; it is
counted, never guessed at. The job's latest checkpoint goes on with the retry (and the
dead letter, for a redrive): the failed run's own, else the one it resumed from.
"""

from __future__ import annotations

import logging

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.deadlines import retry_refusal
from jobstream._pipeline.model.lifecycle import FAILURE_KINDS, LifecycleKind
from jobstream._pipeline.model.records import (
    Checkpoint,
    DeadLettered,
    Event,
    ExecutionRequested,
    JobLifecycle,
    RetryScheduled,
    lifecycle,
)
from jobstream._pipeline.model.retry import DeadLetter, Retry, RetryDefaults, decide
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime.counters import Counters
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


class RetryRouter:
    def __init__(self, topics: Topics, defaults: RetryDefaults | None = None) -> None:
        self.topics = topics
        self.defaults = defaults or RetryDefaults()
        self.stats = Counters("retried", "dead_lettered", "expired", "unroutable",
                              "bad_policies")  # fmt: skip
        """``unroutable``: failures without an ``execution`` (or with one no policy can use);
        ``bad_policies``: jobs whose own retry policy was invalid, so the type's default was
        used instead."""

    def route(self, event: Event, now_ms: int) -> list[Output]:
        """The records that route ``event``; none for anything but a routable failure.

        ``now_ms`` (the router's clock) stamps the records it writes; the retry time counts
        from the failure's own ``at_ms``, so a replay of jobs.events decides the same time.
        """
        if event.name != "JobLifecycle":
            return []
        failure: JobLifecycle = event.data
        if failure.kind not in FAILURE_KINDS:
            return []
        execution = failure.execution
        if execution is None:
            self.stats.unroutable += 1
            return []
        try:
            policy = self.defaults.policy_for(execution.spec)
        except ValidationError:
            self.stats.bad_policies += 1
            policy = self.defaults.for_type(execution.spec.job_type)
        try:
            decision = decide(failure, policy, now_ms=failure.at_ms)
        except ValueError:  # an execution whose attempt no backoff is defined for
            self.stats.unroutable += 1
            return []
        resume_from = failure.checkpoint or execution.resume_from
        if isinstance(decision, Retry):
            expiry = retry_refusal(execution.spec, attempt=decision.attempt,
                                   retry_at_ms=decision.retry_at_ms,
                                   last_error=decision.errors[-1])  # fmt: skip
            if expiry is not None:
                self.stats.expired += 1
                step = lifecycle(LifecycleKind.EXPIRED, execution, at_ms=now_ms,
                                 detail=expiry.message,
                                 error=expiry.error(attempt=execution.attempt,
                                                    at_ms=now_ms))  # fmt: skip
                key = partition_key(execution.job_id, execution.workflow_id)
                return [Output(self.topics.events, key, Event.of(step), urgent=True)]
            self.stats.retried += 1
            return self._retry(execution, decision, resume_from, now_ms)
        self.stats.dead_lettered += 1
        return self._dead_letter(execution, decision, resume_from, now_ms)

    def _retry(self, execution: ExecutionRequested, retry: Retry,
               resume_from: Checkpoint | None, now_ms: int) -> list[Output]:  # fmt: skip
        key = partition_key(execution.job_id, execution.workflow_id)
        scheduled = RetryScheduled(
            job_id=execution.job_id, workflow_id=execution.workflow_id, attempt=retry.attempt,
            epoch=execution.epoch, retry_at_ms=retry.retry_at_ms, spec=execution.spec,
            errors=retry.errors, idempotency_key=execution.idempotency_key,
            resume_from=resume_from,
        )  # fmt: skip
        last = retry.errors[-1]
        step = lifecycle(
            LifecycleKind.RETRY_SCHEDULED, execution, at_ms=now_ms, attempt=retry.attempt,
            scheduled_at_ms=retry.retry_at_ms,
            detail=f"attempt {retry.attempt - 1} failed ({last.error_type}); "
                   f"retry in {retry.delay_ms} ms",
        )  # fmt: skip
        return [Output(self.topics.retry, key, Event.of(scheduled), urgent=True),
                Output(self.topics.events, key, Event.of(step), urgent=True)]  # fmt: skip

    def _dead_letter(self, execution: ExecutionRequested, dead: DeadLetter,
                     resume_from: Checkpoint | None, now_ms: int) -> list[Output]:  # fmt: skip
        key = partition_key(execution.job_id, execution.workflow_id)
        record = DeadLettered(
            job_id=execution.job_id, workflow_id=execution.workflow_id,
            idempotency_key=execution.idempotency_key, dead_lettered_at_ms=now_ms,
            reason=dead.reason, attempts=dead.attempts, spec=execution.spec, errors=dead.errors,
            resume_from=resume_from,
        )  # fmt: skip
        step = lifecycle(
            LifecycleKind.DEAD_LETTERED, execution, at_ms=now_ms, attempt=dead.attempts,
            error=dead.errors[-1], detail=dead.reason,
        )  # fmt: skip
        return [
            Output(self.topics.dead_letter(execution.spec.job_type), key, Event.of(record),
                   urgent=True),
            Output(self.topics.events, key, Event.of(step), urgent=True),
        ]
