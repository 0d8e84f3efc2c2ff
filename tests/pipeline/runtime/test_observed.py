"""The job metrics read off lifecycle events: each kind moves its own series, once."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import JobLifecycle
from jobstream._pipeline.runtime.observed import observe, observe_all, observe_launch
from jobstream._pipeline.serde import Event

TYPE = "observed.test"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"job_type": TYPE, **labels}) or 0.0


def event(kind: str, **fields: Any) -> JobLifecycle:
    return JobLifecycle(kind=LifecycleKind(kind), job_id="01J00000000000000000000000",
                        job_type=TYPE, at_ms=10_000,
                        execution_id="01J00000000000000000000000:8500:1", **fields)  # fmt: skip


def test_each_kind_moves_its_series() -> None:
    names = ["jobstream_fired_total", "jobstream_fire_lateness_seconds_count",
             "jobstream_fire_lateness_seconds_sum", "jobstream_start_lateness_seconds_sum",
             "jobstream_retries_total", "jobstream_dead_letters_total",
             "jobstream_duplicates_total", "jobstream_leases_expired_total"]  # fmt: skip
    before = {name: sample(name) for name in names}
    outcomes = {o: sample("jobstream_executions_total", outcome=o) for o in ("SUCCEEDED", "LOST")}
    observe(event("FIRED", lateness_ms=250))
    observe(event("STARTED"))  # counts nothing: the launch below does
    observe_launch(TYPE, 8500, 10_000)  # 1.5 s after its scheduled time
    observe(event("HEARTBEAT"))
    observe(event("SUCCEEDED"))
    observe(event("LOST"))
    observe_all([Event("JobLifecycle", event("RETRY_SCHEDULED")), b"not an event",
                 Event("JobLifecycle", event("DEAD_LETTERED")),
                 Event("JobLifecycle", event("DUPLICATE")),
                 Event("ExecutionRequested", {"kind": "FIRED", "job_type": TYPE})])  # fmt: skip
    moved = {name: sample(name) - before[name] for name in names}
    assert moved == {
        "jobstream_fired_total": 1, "jobstream_fire_lateness_seconds_count": 1,
        "jobstream_fire_lateness_seconds_sum": 0.25, "jobstream_start_lateness_seconds_sum": 1.5,
        "jobstream_retries_total": 1, "jobstream_dead_letters_total": 1,
        "jobstream_duplicates_total": 1, "jobstream_leases_expired_total": 1,
    }  # fmt: skip
    for outcome, was in outcomes.items():
        assert sample("jobstream_executions_total", outcome=outcome) - was == 1
