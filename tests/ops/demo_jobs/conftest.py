"""Hand-built job contexts, and the bundled CSV's expected stats."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobstream._ops.demo_jobs.data_process import DATA_DIR
from jobstream._pipeline.worker import JobContext

MakeContext = Callable[..., JobContext]
SALES = DATA_DIR / "sales.csv"


@pytest.fixture
def make_ctx() -> MakeContext:
    """A JobContext as the worker would build it, for calling a handler directly."""

    def make(job_type: str, params: dict[str, Any], *, attempt: int = 1) -> JobContext:
        return JobContext(
            job_id=f"job-{job_type}",
            execution_id=f"exec-{job_type}-{attempt}",
            attempt=attempt,
            epoch=1_767_225_600_000 + attempt,
            job_type=job_type,
            owner="demo",
            params=params,
            scheduled_at_ms=1_767_225_600_000,
            deadline_ms=1_767_225_660_000,
            worker_id="worker-test",
        )

    return make


def expected_stats(path: Path, group_by: str, metric: str) -> dict[str, tuple[int, float]]:
    """(count, sum) of ``metric`` per ``group_by`` value, read with the csv module alone."""
    stats: dict[str, tuple[int, float]] = {}
    with path.open(newline="") as file:
        for row in csv.DictReader(file):
            count, total = stats.get(row[group_by], (0, 0.0))
            stats[row[group_by]] = (count + 1, total + float(row[metric]))
    return stats
