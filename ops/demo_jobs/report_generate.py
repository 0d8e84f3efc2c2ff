"""``report.generate``: an HTML report of a CSV file's aggregates, kept on jobs.results.

Params: those of ``data.process`` (``input``, ``group_by``, ``metric``) and ``title``
(default "<metric> by <group_by>"). The report is one self-contained HTML page: a
table of count, sum, mean, min, max and share of the total per group, with a totals
row, and the sums as a bar chart (a PNG from ``image.render`` inlined as a data URI).
The result is the page itself, as ``text/html`` (a :class:`~jobstream._pipeline.worker.Result`):
jobs.results keeps it, the SUCCEEDED event carries only where it is, and
``GET /api/v1/jobs/{id}/result`` serves it to a browser as it is.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any

from jobstream._ops.demo_jobs.data_process import DataParams, Summary, summarize
from jobstream._ops.demo_jobs.faults import inject_faults
from jobstream._ops.demo_jobs.image_render import MAX_BARS, ChartParams, render_bar_chart
from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.worker import JobContext, Result

logger = logging.getLogger(__name__)

JOB_TYPE = "report.generate"
TIMEOUT_S = 120.0
CONTENT_TYPE = "text/html; charset=utf-8"

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#212529}"
    "table{border-collapse:collapse}th,td{padding:.3rem .8rem;border-bottom:1px solid #dee2e6}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}tfoot td{font-weight:bold}"
)


def report_title(params: Mapping[str, Any], data: DataParams) -> str:
    """The ``title`` param, or "<metric> by <group_by>"."""
    title = params.get("title", f"{data.metric} by {data.group_by}")
    if not isinstance(title, str) or not title:
        raise NonRetryableError("params.title: expected a non-empty string")
    return title


def chart_png(summary: Summary, title: str) -> bytes | None:
    """The sums per group as a bar chart, or None when there are too many groups to draw."""
    if not summary.groups or len(summary.groups) > MAX_BARS:
        return None
    chart = ChartParams(width=640, height=360, title=title,
                        values=tuple(g.total for g in summary.groups),
                        labels=tuple(g.group for g in summary.groups))  # fmt: skip
    return render_bar_chart(chart)


def _num(value: float) -> str:
    return f"{value:,.2f}"


def render_report(
    summary: Summary, *, title: str, generated_at: datetime, chart: bytes | None = None
) -> str:
    """The report as one HTML page; every value from the data is escaped."""
    total = sum(g.total for g in summary.groups)
    body = []
    for g in summary.groups:
        share = g.total / total if total else 0.0
        cells = (g.count, _num(g.total), _num(g.mean), _num(g.minimum), _num(g.maximum),
                 f"{share:.1%}")  # fmt: skip
        body.append(f"<tr><td>{escape(g.group)}</td>"
                    + "".join(f'<td class="n">{c}</td>' for c in cells) + "</tr>")  # fmt: skip
    mean = total / summary.rows if summary.rows else 0.0
    low = _num(min(g.minimum for g in summary.groups)) if summary.groups else ""
    high = _num(max(g.maximum for g in summary.groups)) if summary.groups else ""
    heads = (summary.group_by, "count", f"sum of {summary.metric}", "mean", "min", "max", "share")
    image = ""
    if chart is not None:
        data = base64.b64encode(chart).decode("ascii")
        image = f'<p><img alt="{escape(title)}" src="data:image/png;base64,{data}"></p>'
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>',
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{summary.rows} rows of <code>{escape(summary.source)}</code>, "
        f"generated {generated_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC.</p>",
        image,
        "<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in heads) + "</tr></thead>",
        "<tbody>", *body, "</tbody>",
        f'<tfoot><tr><td>total</td><td class="n">{summary.rows}</td>'
        f'<td class="n">{_num(total)}</td><td class="n">{_num(mean)}</td>'
        f'<td class="n">{low}</td><td class="n">{high}</td>'
        f'<td class="n">{"100.0%" if total else ""}</td></tr></tfoot></table>',
        "</body></html>",
    ])  # fmt: skip


def handle(ctx: JobContext) -> Result:
    """The ``report.generate`` handler: the HTML page, as the job's result."""
    inject_faults(ctx.params, ctx.attempt)
    data = DataParams.from_params(ctx.params)
    title = report_title(ctx.params, data)
    ctx.progress(0.0, f"reading {data.input}")
    summary = summarize(data)
    ctx.progress(0.4, f"drawing the chart of {len(summary.groups)} groups")
    chart = chart_png(summary, title)
    ctx.progress(0.8, "writing the page")
    page = render_report(summary, title=title, generated_at=datetime.now(UTC),
                         chart=chart).encode()  # fmt: skip
    ctx.progress(1.0, f"{len(page)} bytes of HTML")
    logger.info("job %s: report of %d rows in %d groups, %d bytes", ctx.job_id,
                summary.rows, len(summary.groups), len(page))  # fmt: skip
    return Result(page, CONTENT_TYPE)
