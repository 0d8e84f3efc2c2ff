"""The job metrics, read off the lifecycle events a process commits: one function for every
process, so a firing, a run, a retry or a lost lease is counted the same way wherever it
happens (the timers write FIRED, the workers STARTED and the outcomes, the retry router
RETRY_SCHEDULED and DEAD_LETTERED, the status processor LOST and DUPLICATE).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline import metrics
from pipeline.lifecycle import LifecycleKind as K
from pipeline.scheduling.ids import scheduled_ms_of
from pipeline.serde import Event

_OUTCOMES = frozenset({K.SUCCEEDED, K.FAILED, K.TIMED_OUT, K.LOST})


def observe(event: Mapping[str, Any]) -> None:
    """Count one JobLifecycle event (its ``data``)."""
    kind, job_type = event.get("kind"), event.get("job_type") or ""
    if kind == K.FIRED:
        metrics.FIRED.labels(job_type).inc()
        if event.get("lateness_ms") is not None:
            metrics.FIRE_LATENESS.labels(job_type).observe(max(0, event["lateness_ms"]) / 1000)
    elif kind == K.STARTED:
        scheduled = scheduled_ms_of(event.get("execution_id"))
        if scheduled is not None:
            lateness = max(0, int(event["at_ms"]) - scheduled)
            metrics.START_LATENESS.labels(job_type).observe(lateness / 1000)
    elif kind == K.RETRY_SCHEDULED:
        metrics.RETRIES.labels(job_type).inc()
    elif kind == K.DEAD_LETTERED:
        metrics.DEAD_LETTERS.labels(job_type).inc()
    elif kind == K.DUPLICATE:
        metrics.DUPLICATES.labels(job_type).inc()
    if kind in _OUTCOMES:
        metrics.EXECUTIONS.labels(job_type, kind).inc()
        if kind == K.LOST:
            metrics.LEASES_EXPIRED.labels(job_type).inc()


def observe_all(values: Iterable[object]) -> None:
    """Count the JobLifecycle events among committed output values."""
    for value in values:
        if isinstance(value, Event) and value.name == "JobLifecycle":
            observe(value.data)
