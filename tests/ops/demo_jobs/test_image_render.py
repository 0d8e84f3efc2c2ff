from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from jobstream._ops.demo_jobs.faults import TransientDemoError
from jobstream._ops.demo_jobs.image_render import (
    BACKGROUND,
    INK,
    PALETTE,
    ChartParams,
    bar_boxes,
    font_sizes,
    render_bar_chart,
)
from jobstream._ops.demo_jobs.image_render import handle as render
from jobstream._pipeline.errors import NonRetryableError
from tests.ops.demo_jobs.conftest import MakeContext


def open_png(data: bytes) -> Image.Image:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    return image.convert("RGB")


def test_the_png_has_the_asked_size_and_one_coloured_bar_per_value() -> None:
    chart = ChartParams(width=400, height=300, title="Units", values=(2.0, 8.0, 4.0))
    image = open_png(render_bar_chart(chart))
    assert image.size == (400, 300)
    boxes = bar_boxes(chart)
    for i, (left, top, right, bottom) in enumerate(boxes):
        assert image.getpixel(((left + right) // 2, (top + bottom) // 2)) == PALETTE[i]
    heights = [bottom - top for _, top, _, bottom in boxes]
    assert heights[1] > heights[2] > heights[0] > 0
    assert heights[1] / heights[0] == pytest.approx(4, rel=0.05)


def test_the_title_and_labels_are_drawn() -> None:
    chart = ChartParams(width=400, height=300, title="A title", values=(1.0, 2.0),
                        labels=("north", "south"))  # fmt: skip
    image = open_png(render_bar_chart(chart))
    title_size, _ = font_sizes(300)
    boxes = bar_boxes(chart)
    title_band = image.crop((0, 0, 400, 2 * title_size))
    label_band = image.crop((0, boxes[0][3] + 2, 400, 300))
    for band in (title_band, label_band):
        inked = [c for _, c in band.getcolors(maxcolors=100_000) or [] if isinstance(c, tuple)]
        assert any(sum(colour) < sum(INK) + 60 for colour in inked)  # dark text pixels
        assert set(inked) - {BACKGROUND, INK}  # anti-aliased edges


def test_negative_values_hang_below_the_zero_line() -> None:
    chart = ChartParams(width=300, height=300, values=(5.0, -5.0))
    (_, top0, _, bottom0), (_, top1, _, bottom1) = bar_boxes(chart)
    assert bottom0 == top1  # both touch the zero line
    assert bottom1 - top1 == pytest.approx(bottom0 - top0, abs=1)
    image = open_png(render_bar_chart(chart))
    assert image.getpixel((150, 290)) == BACKGROUND


def test_all_zero_values_still_render() -> None:
    image = open_png(render_bar_chart(ChartParams(values=(0.0, 0.0))))
    assert image.size == (640, 480)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"width": "640"}, "width"),
        ({"width": True}, "width"),
        ({"height": 10}, "height"),
        ({"height": 10_000}, "height"),
        ({"title": 3}, "title"),
        ({"values": []}, "values"),
        ({"values": [1, "2"]}, "values"),
        ({"values": [1, True]}, "values"),
        ({"values": [float("nan")]}, "values"),
        ({"values": list(range(101))}, "values"),
        ({"values": [1, 2], "labels": ["a"]}, "labels"),
        ({"values": [1, 2], "labels": "ab"}, "labels"),
    ],
)
def test_bad_params_are_named_and_not_retried(params: dict[str, Any], field: str) -> None:
    with pytest.raises(NonRetryableError, match=rf"params\.{field}"):
        ChartParams.from_params(params)


def test_too_many_bars_for_the_width_are_refused() -> None:
    chart = ChartParams.from_params({"width": 64, "values": list(range(100))})
    with pytest.raises(NonRetryableError, match="too narrow"):
        render_bar_chart(chart)


def test_handler_returns_png_bytes_from_params(make_ctx: MakeContext) -> None:
    values = [3, 1, 4, 1, 5]
    params = {"width": 320, "height": 200, "title": "Demo", "values": values}
    data = render(make_ctx("image.render", params))
    assert isinstance(data, bytes)
    image = open_png(data)
    assert image.size == (320, 200)
    assert len(image.getcolors(maxcolors=100_000) or []) > len(values)


def test_handler_fails_until_the_asked_attempt(make_ctx: MakeContext) -> None:
    params = {"fail_until_attempt": 2}
    with pytest.raises(TransientDemoError):
        render(make_ctx("image.render", params, attempt=1))
    assert open_png(render(make_ctx("image.render", params, attempt=2))).size == (640, 480)
