"""Scheduling policies, pure and broker-free: ids, cron next-fire, misfires, one-off times."""

from __future__ import annotations

from jobstream._pipeline.scheduling.cron import (
    CronSpec,
    MisfirePolicy,
    Occurrence,
    OverlapPolicy,
    RepeatedHourPolicy,
    SkippedHourPolicy,
    iter_occurrences,
    jitter_offset_ms,
    next_due_ms,
)
from jobstream._pipeline.scheduling.ids import (
    execution_id,
    job_id_time_ms,
    new_job_id,
    parse_execution_id,
)
from jobstream._pipeline.scheduling.misfire import DueRuns, due_runs
from jobstream._pipeline.scheduling.one_off import normalize_fire_time

__all__ = [
    "CronSpec",
    "DueRuns",
    "MisfirePolicy",
    "Occurrence",
    "OverlapPolicy",
    "RepeatedHourPolicy",
    "SkippedHourPolicy",
    "due_runs",
    "execution_id",
    "iter_occurrences",
    "jitter_offset_ms",
    "job_id_time_ms",
    "new_job_id",
    "next_due_ms",
    "normalize_fire_time",
    "parse_execution_id",
]
