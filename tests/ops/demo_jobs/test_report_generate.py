from __future__ import annotations

import base64
import io
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from jobstream._ops.demo_jobs.data_process import GroupStats, Summary, summarize_csv
from jobstream._ops.demo_jobs.faults import PoisonDemoError, TransientDemoError
from jobstream._ops.demo_jobs.image_render import MAX_BARS
from jobstream._ops.demo_jobs.report_generate import chart_png, render_report
from jobstream._ops.demo_jobs.report_generate import handle as generate
from jobstream._pipeline.errors import NonRetryableError
from tests.ops.demo_jobs.conftest import SALES, MakeContext, expected_stats

WHEN = datetime(2026, 1, 1, 9, 30, tzinfo=UTC)


class TableRows(HTMLParser):
    """The text of each table row's cells, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table(page: str) -> list[list[str]]:
    parser = TableRows()
    parser.feed(page)
    return parser.rows


def test_the_table_holds_each_group_and_the_totals(tmp_path: Path) -> None:
    path = tmp_path / "tiny.csv"
    path.write_text("region,units\nnorth,3\nsouth,5\nnorth,7\nsouth,1\neast,10\n")
    summary = summarize_csv(path, group_by="region", metric="units", source="tiny.csv")
    page = render_report(summary, title="Units by region", generated_at=WHEN)
    assert page.startswith("<!DOCTYPE html>")
    assert "<h1>Units by region</h1>" in page
    assert "2026-01-01 09:30:00 UTC" in page
    assert table(page) == [
        ["region", "count", "sum of units", "mean", "min", "max", "share"],
        ["east", "1", "10.00", "10.00", "10.00", "10.00", "38.5%"],
        ["north", "2", "10.00", "5.00", "3.00", "7.00", "38.5%"],
        ["south", "2", "6.00", "3.00", "1.00", "5.00", "23.1%"],
        ["total", "5", "26.00", "5.20", "1.00", "10.00", "100.0%"],
    ]


def test_text_from_the_data_and_params_is_escaped() -> None:
    summary = Summary("<x>.csv", "region", "units", 1, (GroupStats("<b>n</b>", 1, 1, 1, 1),))
    page = render_report(summary, title="<script>alert(1)</script>", generated_at=WHEN)
    assert "<script>" not in page and "<b>" not in page and "<x>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;n&lt;/b&gt;" in page


def test_no_chart_for_more_groups_than_bars() -> None:
    groups = tuple(GroupStats(f"g{i:03}", 1, 1, 1, 1) for i in range(MAX_BARS + 1))
    assert chart_png(Summary("x.csv", "g", "m", len(groups), groups), "t") is None


def test_handler_returns_the_html_report_of_the_sales(make_ctx: MakeContext) -> None:
    ctx = make_ctx("report.generate", {"report": "daily", "title": "Daily sales"})
    result = generate(ctx)
    assert result.content_type.startswith("text/html")
    html = result.body.decode()
    assert "200 rows of" in html
    expected = expected_stats(SALES, "region", "units")
    rows = {row[0]: row for row in table(html)[1:-1]}
    assert sorted(rows) == sorted(expected)
    for region, (count, total) in expected.items():
        assert rows[region][1] == str(count)
        assert rows[region][2] == f"{total:,.2f}"
        assert rows[region][3] == f"{total / count:,.2f}"
    chart = re.search(r'src="data:image/png;base64,([^"]+)"', html)
    assert chart is not None
    assert Image.open(io.BytesIO(base64.b64decode(chart.group(1)))).size == (640, 360)


def test_handler_fails_until_the_asked_attempt(make_ctx: MakeContext) -> None:
    params = {"fail_until_attempt": 3}
    for attempt in (1, 2):
        with pytest.raises(TransientDemoError):
            generate(make_ctx("report.generate", params, attempt=attempt))
    assert b"200 rows of" in generate(make_ctx("report.generate", params, attempt=3)).body


def test_a_poison_report_fails_at_every_attempt(make_ctx: MakeContext) -> None:
    for attempt in range(1, 6):
        with pytest.raises(PoisonDemoError):
            generate(make_ctx("report.generate", {"poison": True}, attempt=attempt))


def test_a_bad_title_is_not_retried(make_ctx: MakeContext) -> None:
    with pytest.raises(NonRetryableError, match=r"params\.title"):
        generate(make_ctx("report.generate", {"title": ""}))


def test_an_empty_csv_gives_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("region,units\n")
    summary = summarize_csv(path, group_by="region", metric="units")
    assert summary.rows == 0 and chart_png(summary, "t") is None
    rows = table(render_report(summary, title="t", generated_at=WHEN))
    assert rows[1:] == [["total", "0", "0.00", "0.00", "", "", ""]]
