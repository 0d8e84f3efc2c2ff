"""The retry router's processing step: one failure in, the records that route it out.

Pure over events, like the timers' logic (pipeline/timers/logic.py):
:meth:`RetryRouter.route` turns a FAILED, TIMED_OUT or LOST JobLifecycle into either

- a RetryScheduled on jobs.retry (the timers fire it at ``retry_at_ms``, so a retry is as
  punctual as any firing) and a RETRY_SCHEDULED JobLifecycle on jobs.events, or
- a DeadLettered on ``jobs.dlq.<type>`` and a DEAD_LETTERED JobLifecycle,

and the runner commits both records of a pair with the input offset in one transaction.
Every record is keyed by the job's partition key, so the retry lands on the jobs.retry
partition that holds the job's own timers (a cancel finds both) and the history of a job
stays in order on jobs.events.

The router needs nothing but the event: the failed ``execution`` travels in it (spec,
attempt, earlier errors, idempotency key). An event without one cannot be routed; it is
counted, never guessed at.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pipeline.errors import ValidationError
from pipeline.model.lifecycle import FAILURE_KINDS, LifecycleKind, epoch_of
from pipeline.model.retry import DeadLetter, Retry, RetryDefaults, decide
from pipeline.partitioning import partition_key
from pipeline.runtime.counters import Counters
from pipeline.runtime.processor import Output
from pipeline.serde import Event
from pipeline.topics import Topics

log = logging.getLogger(__name__)


def lifecycle_event(
    kind: LifecycleKind, *, job_id: str, workflow_id: str | None, spec: Mapping[str, Any],
    at_ms: int, **fields: Any,
) -> Event:  # fmt: skip
    """A JobLifecycle with the fields every kind carries; ``fields`` adds the rest."""
    return Event("JobLifecycle", {
        "kind": kind, "job_id": job_id, "workflow_id": workflow_id, "at_ms": at_ms,
        "job_type": spec.get("job_type", ""), "owner": spec.get("owner", ""), **fields,
    })  # fmt: skip


def _job(execution: Mapping[str, Any]) -> tuple[str, str | None, Mapping[str, Any]]:
    return execution["job_id"], execution.get("workflow_id"), execution["spec"]


class RetryRouter:
    def __init__(self, topics: Topics, defaults: RetryDefaults | None = None) -> None:
        self.topics = topics
        self.defaults = defaults or RetryDefaults()
        self.stats = Counters("retried", "dead_lettered", "unroutable", "bad_policies")
        """``unroutable``: failures without an ``execution`` (or with one no policy can use);
        ``bad_policies``: jobs whose own retry policy was invalid, so the type's default was
        used instead."""

    def route(self, event: Event, now_ms: int) -> list[Output]:
        """The records that route ``event``; none for anything but a routable failure.

        ``now_ms`` (the router's clock) stamps the records it writes; the retry time counts
        from the failure's own ``at_ms``, so a replay of jobs.events decides the same time.
        """
        data = event.data
        if event.name != "JobLifecycle" or data.get("kind") not in FAILURE_KINDS:
            return []
        execution = data.get("execution")
        if execution is None:
            self.stats.unroutable += 1
            return []
        spec = execution["spec"]
        try:
            policy = self.defaults.policy_for(spec)
        except ValidationError:
            self.stats.bad_policies += 1
            policy = self.defaults.for_type(spec["job_type"])
        try:
            decision = decide(data, policy, now_ms=data["at_ms"])
        except ValueError:  # an execution whose attempt no backoff is defined for
            self.stats.unroutable += 1
            return []
        if isinstance(decision, Retry):
            self.stats.retried += 1
            return self._retry(execution, decision, now_ms)
        self.stats.dead_lettered += 1
        return self._dead_letter(execution, decision, now_ms)

    def _retry(self, execution: Mapping[str, Any], retry: Retry, now_ms: int) -> list[Output]:
        job_id, workflow_id, spec = _job(execution)
        key = partition_key(job_id, workflow_id)
        scheduled = Event("RetryScheduled", {
            "job_id": job_id, "workflow_id": workflow_id, "attempt": retry.attempt,
            "epoch": epoch_of(execution), "retry_at_ms": retry.retry_at_ms, "spec": spec,
            "errors": retry.errors, "idempotency_key": execution.get("idempotency_key"),
        })  # fmt: skip
        last = retry.errors[-1]
        step = lifecycle_event(
            LifecycleKind.RETRY_SCHEDULED, job_id=job_id, workflow_id=workflow_id, spec=spec,
            at_ms=now_ms, attempt=retry.attempt, epoch=epoch_of(execution),
            execution_id=execution["execution_id"], scheduled_at_ms=retry.retry_at_ms,
            detail=f"attempt {retry.attempt - 1} failed ({last['error_type']}); "
                   f"retry in {retry.delay_ms} ms",
        )  # fmt: skip
        return [Output(self.topics.retry, key, scheduled), Output(self.topics.events, key, step)]

    def _dead_letter(self, execution: Mapping[str, Any], dead: DeadLetter,
                     now_ms: int) -> list[Output]:  # fmt: skip
        job_id, workflow_id, spec = _job(execution)
        key = partition_key(job_id, workflow_id)
        record = Event("DeadLettered", {
            "job_id": job_id, "workflow_id": workflow_id,
            "idempotency_key": execution.get("idempotency_key"), "dead_lettered_at_ms": now_ms,
            "reason": dead.reason, "attempts": dead.attempts, "spec": spec, "errors": dead.errors,
        })  # fmt: skip
        step = lifecycle_event(
            LifecycleKind.DEAD_LETTERED, job_id=job_id, workflow_id=workflow_id, spec=spec,
            at_ms=now_ms, attempt=dead.attempts, epoch=epoch_of(execution),
            execution_id=execution["execution_id"], error=dead.errors[-1], detail=dead.reason,
        )  # fmt: skip
        return [
            Output(self.topics.dead_letter(spec["job_type"]), key, record),
            Output(self.topics.events, key, step),
        ]
