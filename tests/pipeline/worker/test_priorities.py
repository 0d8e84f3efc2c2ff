"""The tier policy: high first under a backlog, low never starved, empty shares pass down."""

from __future__ import annotations

from collections import Counter

import pytest

from jobstream._pipeline.worker.priorities import DEFAULT_WEIGHTS, PriorityPolicy

ALL = ("high", "normal", "low")


def picks(policy: PriorityPolicy, ready: tuple[str, ...], n: int) -> list[str | None]:
    return [policy.pick(ready) for _ in range(n)]


def test_with_a_backlog_everywhere_a_round_is_six_high_three_normal_one_low() -> None:
    policy = PriorityPolicy()
    assert picks(policy, ALL, 10) == ["high"] * 6 + ["normal"] * 3 + ["low"]
    assert Counter(picks(policy, ALL, 1000)) == {"high": 600, "normal": 300, "low": 100}


def test_low_is_never_starved_by_a_permanent_backlog_above_it() -> None:
    policy = PriorityPolicy()
    sequence = picks(policy, ALL, 500)
    for start in range(len(sequence) - 10):
        assert "low" in sequence[start : start + 10], f"no low pick in the window at {start}"


def test_an_empty_tiers_share_passes_down() -> None:
    policy = PriorityPolicy()
    assert Counter(picks(policy, ("normal", "low"), 100)) == {"normal": 90, "low": 10}
    assert Counter(picks(policy, ("high", "low"), 100)) == {"high": 60, "low": 40}
    assert picks(policy, ("low",), 3) == ["low"] * 3


def test_the_low_slot_wraps_round_to_the_highest_tier_with_work() -> None:
    policy = PriorityPolicy()
    assert picks(policy, ("high", "normal"), 10) == ["high"] * 6 + ["normal"] * 3 + ["high"]


def test_nothing_ready_picks_nothing_and_keeps_the_turn() -> None:
    policy = PriorityPolicy()
    assert policy.pick(()) is None
    assert policy.pick(ALL) == "high"


@pytest.mark.parametrize(
    "weights",
    [{"high": 6, "normal": 3}, {"high": 6, "normal": 3, "low": 0}, {**DEFAULT_WEIGHTS, "x": 1}],
)
def test_weights_must_cover_every_tier_with_at_least_one_slot(weights: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        PriorityPolicy(weights)


def test_custom_weights() -> None:
    policy = PriorityPolicy({"high": 1, "normal": 1, "low": 1})
    assert picks(policy, ALL, 6) == ["high", "normal", "low"] * 2
