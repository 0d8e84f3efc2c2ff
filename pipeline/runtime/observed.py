"""The job metrics, read off the lifecycle events a process commits: one function for every
process, so a firing, a run, a retry or a lost lease is counted the same way wherever it
happens (the timers write FIRED, the workers the outcomes, the retry router
RETRY_SCHEDULED and DEAD_LETTERED, the status processor LOST and DUPLICATE, and EXPIRED
whichever of them gave the job up). A run's start
lateness is the exception: :func:`observe_launch` counts it when its handler is launched,
which may come after its STARTED was written (a run claimed ahead of its due instant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from jobstream._pipeline import metrics
from jobstream._pipeline.model.deadlines import expiry_reason
from jobstream._pipeline.model.lifecycle import LifecycleKind as K
from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.serde import Event

_OUTCOMES = frozenset({K.SUCCEEDED, K.FAILED, K.TIMED_OUT, K.LOST})


Labelled = Callable[..., Any]
"""``labelled(metric, *label_values)``: the metric's child for those labels."""


def _labels(metric: Any, *values: str) -> Any:
    return metric.labels(*values)


def observe(event: JobLifecycle, labelled: Labelled = _labels) -> None:
    """Count one JobLifecycle event (its ``data``)."""
    kind, job_type = event.kind, event.job_type
    if kind == K.FIRED:
        labelled(metrics.FIRED, job_type).inc()
        throttled = event.throttled_ms or 0
        if throttled:
            labelled(metrics.THROTTLED_SECONDS, job_type).observe(throttled / 1000)
        if event.lateness_ms is not None:  # the timers' own part: without the limits'
            lateness_s = max(0, event.lateness_ms - throttled) / 1000
            labelled(metrics.FIRE_LATENESS, job_type).observe(lateness_s)
    elif kind == K.RETRY_SCHEDULED:
        labelled(metrics.RETRIES, job_type).inc()
    elif kind == K.DEAD_LETTERED:
        labelled(metrics.DEAD_LETTERS, job_type).inc()
    elif kind == K.DUPLICATE:
        labelled(metrics.DUPLICATES, job_type).inc()
    elif kind == K.EXPIRED:
        labelled(metrics.EXPIRED, job_type, expiry_reason(event.error)).inc()
    if kind in _OUTCOMES:
        labelled(metrics.EXECUTIONS, job_type, kind).inc()
        if kind == K.LOST:
            labelled(metrics.LEASES_EXPIRED, job_type).inc()


def observe_all(values: Iterable[object]) -> None:
    """Count the JobLifecycle events among committed output values.

    Each metric's child for a label set is looked up once per call, not once per event:
    ``labels()`` takes a lock and builds its key every time, which showed at 3 % of the
    timers' CPU while they fired thousands of jobs per transaction. The children live for
    the call only, so a metric cleared between calls is never written through a stale one.
    """
    found: dict[tuple[int, tuple[str, ...]], Any] = {}

    def labelled(metric: Any, *values: str) -> Any:
        key = (id(metric), values)
        child = found.get(key)
        if child is None:
            child = found[key] = metric.labels(*values)
        return child

    for value in values:
        if isinstance(value, Event) and value.name == "JobLifecycle":
            observe(value.data, labelled)


def observe_launch(job_type: str, due_ms: int, launched_ms: int) -> None:
    """A run's handler was launched at ``launched_ms``: its start lateness."""
    lateness = max(0, launched_ms - due_ms)
    metrics.START_LATENESS.labels(job_type).observe(lateness / 1000)
