"""``data.process``: aggregate one numeric column of a CSV file, per group.

Params: ``input`` (a local ``.csv`` path; relative paths are read from
``ops/demo_jobs/data``, default ``sales.csv``), ``group_by`` (a column, default
``region``), ``metric`` (a numeric column, default ``units``). The result is JSON:
count, sum, mean, min and max of the metric for each group, sorted by group.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from jobstream._ops.demo_jobs.faults import inject_faults
from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.package_data import package_path
from jobstream._pipeline.worker import JobContext

logger = logging.getLogger(__name__)

JOB_TYPE = "data.process"
TIMEOUT_S = 60.0
DATA_DIR = package_path("jobstream._ops.demo_jobs", "data")
DEFAULT_INPUT = "sales.csv"


@dataclass(frozen=True, slots=True)
class GroupStats:
    """The metric's statistics over the rows of one group."""

    group: str
    count: int
    total: float
    minimum: float
    maximum: float

    @property
    def mean(self) -> float:
        """Arithmetic mean; ``count`` is never 0 since a group exists only with a row."""
        return self.total / self.count

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form, as in the job's result."""
        return {"group": self.group, "count": self.count, "sum": self.total,
                "mean": self.mean, "min": self.minimum, "max": self.maximum}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Summary:
    """The aggregation of one CSV file: what was read and the stats of each group."""

    source: str
    group_by: str
    metric: str
    rows: int
    groups: tuple[GroupStats, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: the ``data.process`` result."""
        return {"input": self.source, "group_by": self.group_by, "metric": self.metric,
                "rows": self.rows, "total": sum(g.total for g in self.groups),
                "groups": [g.as_dict() for g in self.groups]}  # fmt: skip


@dataclass(frozen=True)
class DataParams:
    """The parameters of ``data.process`` (``report.generate`` reads the same ones)."""

    input: str = DEFAULT_INPUT
    group_by: str = "region"
    metric: str = "units"

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> DataParams:
        """Read and check the job's params; a wrong one raises NonRetryableError naming it."""
        values = {f.name: params.get(f.name, f.default) for f in fields(cls)}
        for name, value in values.items():
            if not isinstance(value, str) or not value:
                raise NonRetryableError(f"params.{name}: expected a non-empty string")
        return cls(**values)


def resolve_input(value: str) -> Path:
    """The local CSV file ``value`` names: absolute, or relative to :data:`DATA_DIR`.

    Absolute paths let a demo read any file the worker can; a worker serving untrusted
    owners would confine ``input`` to a data root.
    """
    if "://" in value:
        raise NonRetryableError(f"params.input: only local files are read, not {value!r}")
    path = DATA_DIR / value  # an absolute value replaces DATA_DIR
    if path.suffix.lower() != ".csv":
        raise NonRetryableError(f"params.input: only CSV (.csv) input is read, not {value!r}")
    if not path.is_file():
        raise NonRetryableError(f"params.input: no such file: {value!r}")
    return path


def aggregate(
    rows: Iterable[Mapping[str, str | None]], *, group_by: str, metric: str
) -> tuple[GroupStats, ...]:
    """Count, sum, min and max of the ``metric`` column per ``group_by`` value, by group."""
    acc: dict[str, tuple[int, float, float, float]] = {}
    for number, row in enumerate(rows, start=1):
        raw, group = row.get(metric), row.get(group_by)
        try:
            value = float(raw or "")
        except ValueError:
            raise NonRetryableError(f"row {number}: {metric} is not a number: {raw!r}") from None
        if not math.isfinite(value) or group is None:
            raise NonRetryableError(f"row {number}: bad {metric} or {group_by}: {dict(row)}")
        count, total, low, high = acc.get(group, (0, 0.0, value, value))
        acc[group] = (count + 1, total + value, min(low, value), max(high, value))
    return tuple(GroupStats(g, *acc[g]) for g in sorted(acc))


def summarize_csv(path: Path, *, group_by: str, metric: str, source: str = "") -> Summary:
    """Aggregate the CSV file at ``path`` (with a header row); ``source`` names it."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as file:
            reader = csv.DictReader(file)
            missing = [c for c in (group_by, metric) if c not in (reader.fieldnames or [])]
            if missing:
                raise NonRetryableError(
                    f"{path.name}: no column {missing[0]!r} (columns: {reader.fieldnames})"
                )
            groups = aggregate(reader, group_by=group_by, metric=metric)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise NonRetryableError(f"{path.name}: not a readable CSV file: {exc}") from exc
    return Summary(source or str(path), group_by, metric, sum(g.count for g in groups), groups)


def summarize(params: DataParams) -> Summary:
    """The summary ``params`` ask for, reading their input file."""
    path, group_by, metric = resolve_input(params.input), params.group_by, params.metric
    return summarize_csv(path, group_by=group_by, metric=metric, source=params.input)


def handle(ctx: JobContext) -> dict[str, Any]:
    """The ``data.process`` handler: the summary of the input file, inline as JSON."""
    inject_faults(ctx.params, ctx.attempt)
    data = DataParams.from_params(ctx.params)
    ctx.progress(0.0, f"reading {data.input}")
    summary = summarize(data)
    ctx.progress(1.0, f"{summary.rows} rows in {len(summary.groups)} groups")
    logger.info("job %s: %d rows, %d groups", ctx.job_id, summary.rows, len(summary.groups))
    return summary.as_dict()
