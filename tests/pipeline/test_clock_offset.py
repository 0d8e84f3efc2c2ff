"""The clock offset estimate from brokers' stamps: pure, no broker."""

from __future__ import annotations

import pytest

from jobstream._pipeline.clock_offset import OffsetEstimate, OffsetSample, needs_correction


def test_a_probe_bounds_the_offset_by_its_round_trip() -> None:
    # Sent at host 1,000, back 40 ms later, stamped 6,010 by the broker: the cluster read
    # 6,010 at some host instant in [1,000, 1,040], so the offset is in [4,970, 5,010].
    sample = OffsetSample.of(sent_ms=1_000, round_trip_ms=40, stamp_ms=6_010)
    assert sample.offset_ms == 4_990
    assert sample.error_ms == 21  # half the round trip, and the stamp's millisecond
    assert sample.offset_ms - sample.error_ms <= 4_970
    assert sample.offset_ms + sample.error_ms >= 5_010


def test_a_probe_cannot_come_back_before_it_left() -> None:
    with pytest.raises(ValueError, match="before it is sent"):
        OffsetSample.of(sent_ms=1_000, round_trip_ms=-1, stamp_ms=1_000)


def test_the_estimate_is_the_tightest_recent_probe() -> None:
    estimate = OffsetEstimate(window=3)
    assert estimate.best() is None
    slow = OffsetSample.of(sent_ms=0, round_trip_ms=400, stamp_ms=-4_700)
    quick = OffsetSample.of(sent_ms=0, round_trip_ms=4, stamp_ms=-4_998)
    estimate.add(slow)
    estimate.add(quick)
    assert estimate.best() == quick
    for _ in range(3):  # the quick one falls out of the window
        estimate.add(slow)
    assert estimate.best() == slow


def test_a_correction_moves_only_when_the_estimate_says_it_is_wrong() -> None:
    best = OffsetSample(offset_ms=-5_000, error_ms=3)
    assert needs_correction(0, best)
    assert not needs_correction(-5_002, best), "within the error: left alone"
    assert needs_correction(-4_990, best)
