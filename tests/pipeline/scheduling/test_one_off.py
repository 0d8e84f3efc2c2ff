"""One-off fire times: null is now, late within a week is kept, beyond either bound is rejected."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling.one_off import normalize_fire_time

NOW = 1_780_000_000_000
DAY = 86_400_000


def test_null_means_now() -> None:
    assert normalize_fire_time(None, now_ms=NOW) == NOW


@pytest.mark.parametrize(
    "run_at",
    [NOW, NOW + 1, NOW + 3653 * DAY, NOW - 1, NOW - 7 * DAY],
    ids=["now", "future", "ten-years", "just-late", "a-week-late"],
)
def test_in_range_is_kept_so_lateness_shows(run_at: int) -> None:
    assert normalize_fire_time(run_at, now_ms=NOW) == run_at


@pytest.mark.parametrize(
    ("run_at", "kwargs"),
    [
        (NOW - 7 * DAY - 1, {}),
        (NOW + 3653 * DAY + 1, {}),
        (NOW // 1000, {}),  # seconds, not milliseconds
        (NOW - 2, {"max_past_ms": 1}),
        (NOW + 2, {"max_future_ms": 1}),
        (True, {}),
        ("1780000000000", {}),
    ],
)
def test_out_of_range_is_rejected_naming_the_field(run_at: Any, kwargs: dict[str, int]) -> None:
    with pytest.raises(ValidationError) as caught:
        normalize_fire_time(run_at, now_ms=NOW, **kwargs)
    assert caught.value.field == "spec.run_at_ms"


def test_custom_bounds_are_inclusive() -> None:
    assert normalize_fire_time(NOW - 5, now_ms=NOW, max_past_ms=5) == NOW - 5
    assert normalize_fire_time(NOW + 5, now_ms=NOW, max_future_ms=5) == NOW + 5
    with pytest.raises(ValueError):
        normalize_fire_time(NOW, now_ms=NOW, max_past_ms=-1)
