"""ExecutionRequested records built as the timers build them, for worker tests."""

from __future__ import annotations

from typing import Any

import orjson

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.lifecycle import LEASE_EXPIRED
from jobstream._pipeline.model.records import ErrorInfo, evolve, typed
from jobstream._pipeline.scheduling import execution_id, new_job_id
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import outcomes
from tests.support.jobs import cron_schedule
from tests.support.pipeline import SERIALIZE


def execution_requested(
    *, job_type: str = "data.process", params: dict[str, Any] | None = None,
    priority: str = "NORMAL", job_id: str | None = None, attempt: int = 1,
    timeout_ms: int | None = None, overlap: str | None = None, raw_params: str | None = None,
    due_ms: int | None = None,
) -> Event:  # fmt: skip
    """One firing of a job; ``overlap`` makes it a cron run with that overlap policy."""
    job_id = job_id or new_job_id()
    fired = now_ms()
    due_ms = fired if due_ms is None else due_ms
    spec: dict[str, Any] = {
        "job_type": job_type, "owner": "tests",
        "params": raw_params if raw_params is not None else orjson.dumps(params or {}).decode(),
        "priority": priority, "run_at_ms": None,
        "cron": cron_schedule("* * * * *", overlap=overlap) if overlap else None,
        "depends_on": [], "retry": None, "timeout_ms": timeout_ms, "labels": {},
        "on_parent_failure": "CANCEL", "pool": None, "deadline_ms": None, "queue_limit_ms": None,
        "job_keys": None,
    }  # fmt: skip
    return Event.of(typed("ExecutionRequested", {
        "job_id": job_id, "workflow_id": None,
        "execution_id": execution_id(job_id, attempt, due_ms), "attempt": attempt,
        "epoch": fired, "scheduled_at_ms": due_ms, "fired_at_ms": fired,
        "deadline_ms": fired + timeout_ms if timeout_ms else None, "spec": spec,
        "idempotency_key": None, "errors": [], "parent_results": [],
    }))  # fmt: skip


def submit(topics: Topics, *events: Event, partition: int = -1) -> list[str]:
    """Produce executions to their tiers' topics, as the timers do (or all to ``partition``
    of them, in order); their ids, in order."""
    producer = clients.producer(topics.settings)
    for event in events:
        spec = event.data.spec
        producer.produce(topics.execution(spec.job_type, spec.priority),
                         SERIALIZE(event), outcomes.event_key(event.data),
                         partition=partition)  # fmt: skip
    assert producer.flush(60) == 0
    return [event.data.execution_id for event in events]


def suspect(due_ms: int, params: dict[str, Any] | None = None) -> Event:
    """A second attempt whose first one's lease expired: its process died under it."""
    event = execution_requested(attempt=2, params=params, due_ms=due_ms)
    lost = ErrorInfo(attempt=1, error_type=LEASE_EXPIRED, message="no heartbeat", at_ms=due_ms)
    return Event(event.name, evolve(event.data, errors=[lost]))
