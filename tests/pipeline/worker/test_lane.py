"""Which tiers a lane keeps paused: full at 1.0 of its buffer, resumed at half of it."""

from __future__ import annotations

from jobstream._pipeline.worker.pauses import full_tiers

EMPTY: frozenset[str] = frozenset()


def test_a_tier_fills_at_its_limit_and_stays_full_until_half_has_started() -> None:
    full = full_tiers(EMPTY, {"high": 0.0, "normal": 0.99, "low": 0.0})
    assert full == EMPTY
    full = full_tiers(full, {"high": 0.0, "normal": 1.0, "low": 0.0})
    assert full == {"normal"}
    full = full_tiers(full, {"high": 0.0, "normal": 0.51, "low": 0.0})
    assert full == {"normal"}, "not resumed before half of the buffer has started"
    full = full_tiers(full, {"high": 0.0, "normal": 0.5, "low": 0.0})
    assert full == EMPTY
    full = full_tiers(full, {"high": 0.0, "normal": 0.6, "low": 0.0})
    assert full == EMPTY, "refilling below the limit does not pause again"


def test_tiers_fill_independently() -> None:
    full = full_tiers(EMPTY, {"high": 1.0, "normal": 0.3, "low": 1.4})
    assert full == {"high", "low"}
    assert full_tiers(full, {"high": 0.3, "normal": 1.0, "low": 0.7}) == {"normal", "low"}
