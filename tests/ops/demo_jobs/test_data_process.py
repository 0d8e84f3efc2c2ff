from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from jobstream._ops.demo_jobs.data_process import (
    DATA_DIR,
    DataParams,
    GroupStats,
    aggregate,
    resolve_input,
    summarize,
    summarize_csv,
)
from jobstream._ops.demo_jobs.data_process import handle as process
from jobstream._ops.demo_jobs.faults import TransientDemoError
from jobstream._pipeline.errors import NonRetryableError
from tests.ops.demo_jobs.conftest import SALES, MakeContext, expected_stats

TINY = "region,product,units\nnorth,a,3\nsouth,b,5\nnorth,a,7\nsouth,a,1\neast,c,10\n"


@pytest.fixture
def tiny_csv(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
    return path


def test_tiny_csv_aggregates_computed_by_hand(tiny_csv: Path) -> None:
    summary = summarize_csv(tiny_csv, group_by="region", metric="units")
    assert summary.rows == 5
    assert summary.groups == (
        GroupStats("east", count=1, total=10.0, minimum=10.0, maximum=10.0),
        GroupStats("north", count=2, total=10.0, minimum=3.0, maximum=7.0),
        GroupStats("south", count=2, total=6.0, minimum=1.0, maximum=5.0),
    )
    assert [g.mean for g in summary.groups] == [10.0, 5.0, 3.0]
    result = summary.as_dict()
    assert result["total"] == 26.0
    assert result["groups"][1] == {
        "group": "north", "count": 2, "sum": 10.0, "mean": 5.0, "min": 3.0, "max": 7.0,
    }  # fmt: skip


def test_bundled_sales_csv_is_about_200_rows_of_the_documented_columns() -> None:
    with SALES.open(newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == ["date", "region", "product", "units", "price"]
    assert len(rows) - 1 == 200


@pytest.mark.parametrize(("group_by", "metric"), [("region", "units"), ("product", "price")])
def test_bundled_sales_match_an_independent_count(group_by: str, metric: str) -> None:
    expected = expected_stats(SALES, group_by, metric)
    summary = summarize(DataParams(group_by=group_by, metric=metric))
    assert [g.group for g in summary.groups] == sorted(expected)
    for g in summary.groups:
        count, total = expected[g.group]
        assert g.count == count
        assert g.total == pytest.approx(total)
        assert g.mean == pytest.approx(total / count)
    assert summary.rows == 200


def test_relative_input_is_read_from_the_data_folder(tiny_csv: Path) -> None:
    assert resolve_input("sales.csv") == DATA_DIR / "sales.csv"
    assert resolve_input(str(tiny_csv)) == tiny_csv


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("s3://bucket/sales.csv", "only local files"),
        ("sales.parquet", "only CSV"),
        ("missing.csv", "no such file"),
    ],
)
def test_unreadable_inputs_are_not_retried(value: str, message: str) -> None:
    with pytest.raises(NonRetryableError, match=message):
        resolve_input(value)


def test_a_missing_column_is_named(tiny_csv: Path) -> None:
    with pytest.raises(NonRetryableError, match="no column 'revenue'"):
        summarize_csv(tiny_csv, group_by="region", metric="revenue")


@pytest.mark.parametrize("bad", ["", "many", "nan", "inf"])
def test_a_non_numeric_metric_names_its_row(bad: str) -> None:
    rows = [{"region": "north", "units": "1"}, {"region": "south", "units": bad}]
    with pytest.raises(NonRetryableError, match="row 2"):
        aggregate(rows, group_by="region", metric="units")


def test_params_defaults_and_checks() -> None:
    assert DataParams.from_params({"poison": False}) == DataParams("sales.csv", "region", "units")
    with pytest.raises(NonRetryableError, match=r"params\.metric"):
        DataParams.from_params({"metric": 3})


def test_handler_returns_the_summary_as_small_json(make_ctx: MakeContext) -> None:
    params = {"input": "sales.csv", "group_by": "region", "metric": "units"}
    result = process(make_ctx("data.process", params))
    expected = expected_stats(SALES, "region", "units")
    assert {g["group"]: g["count"] for g in result["groups"]} == {
        group: count for group, (count, _) in expected.items()
    }
    assert {g["group"]: g["sum"] for g in result["groups"]} == pytest.approx(
        {group: total for group, (_, total) in expected.items()}
    )
    assert len(json.dumps(result)) < 256 * 1024


def test_handler_fails_until_the_asked_attempt(make_ctx: MakeContext, tiny_csv: Path) -> None:
    params = {"input": str(tiny_csv), "fail_until_attempt": 3}
    for attempt in (1, 2):
        with pytest.raises(TransientDemoError):
            process(make_ctx("data.process", params, attempt=attempt))
    assert process(make_ctx("data.process", params, attempt=3))["rows"] == 5
