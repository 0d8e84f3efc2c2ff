"""``image.render``: draw a bar chart as a PNG with Pillow.

Params: ``width`` and ``height`` (pixels, 64 to 4096, default 640 x 480), ``title``
(default ``jobstream``), ``values`` (1 to 100 numbers, negatives drawn below the zero
line) and optional ``labels`` (one string per value). The result is the PNG's bytes,
which the worker puts on jobs.results (``application/octet-stream``).
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from jobstream._ops.demo_jobs.faults import inject_faults
from jobstream._pipeline.errors import NonRetryableError
from jobstream._pipeline.worker import JobContext

logger = logging.getLogger(__name__)

JOB_TYPE = "image.render"
TIMEOUT_S = 60.0
MIN_SIDE, MAX_SIDE, MAX_BARS = 64, 4096, 100
BACKGROUND, INK, GRID = (255, 255, 255), (33, 37, 41), (206, 212, 218)
PALETTE = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189))


@dataclass(frozen=True)
class ChartParams:
    """What to draw: the canvas size, the title and one bar per value."""

    width: int = 640
    height: int = 480
    title: str = "jobstream"
    values: tuple[float, ...] = (3.0, 7.0, 4.0, 9.0, 5.0)
    labels: tuple[str, ...] = ()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ChartParams:
        """Read and check the job's params; a wrong one raises NonRetryableError naming it."""
        width, height = (params.get(n, getattr(cls, n)) for n in ("width", "height"))
        for name, side in (("width", width), ("height", height)):
            if isinstance(side, bool) or not isinstance(side, int):
                raise NonRetryableError(f"params.{name}: expected an integer, got {side!r}")
            if not MIN_SIDE <= side <= MAX_SIDE:
                raise NonRetryableError(f"params.{name}: {side} not in {MIN_SIDE}..{MAX_SIDE}")
        title = params.get("title", cls.title)
        if not isinstance(title, str):
            raise NonRetryableError("params.title: expected a string")
        values = params.get("values", cls.values)
        if (
            not isinstance(values, Sequence)
            or not 1 <= len(values) <= MAX_BARS
            or any(
                isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                for v in values
            )
        ):
            raise NonRetryableError(f"params.values: expected 1 to {MAX_BARS} finite numbers")
        labels = params.get("labels", ())
        if (
            isinstance(labels, str)
            or not isinstance(labels, Sequence)
            or any(not isinstance(label, str) for label in labels)
            or (labels and len(labels) != len(values))
        ):
            raise NonRetryableError("params.labels: expected one string per value")
        return cls(width, height, title, tuple(float(v) for v in values), tuple(labels))


def font_sizes(height: int) -> tuple[int, int]:
    """Pixel sizes of the title font and of the value and label font, for a chart height."""
    return max(10, min(32, height // 14)), max(8, min(16, height // 30))


def bar_boxes(chart: ChartParams) -> list[tuple[int, int, int, int]]:
    """Each bar's box (left, top, right, bottom) in pixels, bars rising from the zero line."""
    title_size, small_size = font_sizes(chart.height)
    # Room above the bars for the title and values, below for the labels (and the values
    # of negative bars, written under them).
    below = small_size + 8 + (small_size + 4 if min(chart.values) < 0 else 0)
    top, bottom = 2 * title_size + small_size, chart.height - below
    left, right = max(8, chart.width // 32), chart.width - max(8, chart.width // 32)
    low, high = min(0.0, *chart.values), max(0.0, *chart.values)
    span = (high - low) or 1.0
    slot = (right - left) / len(chart.values)
    if slot < 2:
        raise NonRetryableError(f"params.width: {chart.width} px is too narrow for "
                                f"{len(chart.values)} bars")  # fmt: skip

    def y(value: float) -> int:
        return round(bottom - (value - low) / span * (bottom - top))

    boxes = []
    for i, value in enumerate(chart.values):
        x0, x1 = left + i * slot + slot * 0.15, left + (i + 1) * slot - slot * 0.15
        y0, y1 = sorted((y(value), y(0.0)))
        boxes.append((round(x0), y0, max(round(x0), round(x1) - 1), y1))
    return boxes


def render_bar_chart(chart: ChartParams) -> bytes:
    """The chart as PNG bytes: title, zero line, bars, and labels where they fit."""
    image = Image.new("RGB", (chart.width, chart.height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    boxes = bar_boxes(chart)
    title_size, small_size = font_sizes(chart.height)
    title_font = ImageFont.load_default(size=title_size)
    small_font = ImageFont.load_default(size=small_size)
    draw.text((chart.width / 2, title_size), chart.title, fill=INK, font=title_font, anchor="mm")
    # Every bar has one end on the zero line: the bottom of a bar >= 0, the top of one < 0.
    zero = boxes[0][3] if chart.values[0] >= 0 else boxes[0][1]
    draw.line([(boxes[0][0], zero), (boxes[-1][2], zero)], fill=GRID, width=1)
    wide = boxes[0][2] - boxes[0][0] >= 24
    for i, (box, value) in enumerate(zip(boxes, chart.values, strict=True)):
        draw.rectangle(box, fill=PALETTE[i % len(PALETTE)])
        centre = (box[0] + box[2]) / 2
        if wide:
            above = (centre, box[1] - 2) if value >= 0 else (centre, box[3] + 2)
            draw.text(above, f"{value:g}", fill=INK, font=small_font,
                      anchor="md" if value >= 0 else "ma")  # fmt: skip
        if wide and chart.labels:
            draw.text((centre, chart.height - 4), chart.labels[i], fill=INK, font=small_font,
                      anchor="md")  # fmt: skip
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def handle(ctx: JobContext) -> bytes:
    """The ``image.render`` handler: the chart's PNG bytes (stored by the worker)."""
    inject_faults(ctx.params, ctx.attempt)
    chart = ChartParams.from_params(ctx.params)
    ctx.progress(0.0, f"drawing {len(chart.values)} bars at {chart.width}x{chart.height}")
    png = render_bar_chart(chart)
    ctx.progress(1.0, f"PNG of {len(png)} bytes")
    logger.info("job %s: rendered %dx%d chart of %d bars, %d bytes", ctx.job_id,
                chart.width, chart.height, len(chart.values), len(png))  # fmt: skip
    return png
