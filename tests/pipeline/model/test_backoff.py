"""compute_backoff: exponential, capped, jittered from a hash so a replay agrees."""

from __future__ import annotations

import pytest

from jobstream._pipeline.model.backoff import compute_backoff, jitter_fraction


def delay(attempt: int, jitter: float = 0.0, seed: str = "exec-1", *, initial_ms: int = 1000,
          coefficient: float = 2.0, max_ms: int = 300_000) -> int:  # fmt: skip
    return compute_backoff(attempt, initial_ms=initial_ms, coefficient=coefficient,
                           max_ms=max_ms, jitter=jitter, seed=seed)  # fmt: skip


def test_delays_double_from_the_initial_one_without_jitter() -> None:
    assert [delay(a) for a in range(1, 9)] == [
        1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000
    ]  # fmt: skip


def test_the_cap_holds_for_every_attempt_however_large() -> None:
    assert delay(9) == 256_000
    assert delay(10) == 300_000  # 512 s capped at 5 min
    assert delay(2**31 - 1) == 300_000  # coefficient ** attempt would overflow a float
    assert delay(1, initial_ms=10_000, max_ms=5000) == 5000


def test_other_coefficients() -> None:
    assert [delay(a, coefficient=1.0) for a in (1, 2, 50)] == [1000, 1000, 1000]
    assert [delay(a, coefficient=1.1) for a in (1, 2, 3)] == [1000, 1100, 1210]
    assert [delay(a, coefficient=1.5, initial_ms=200) for a in (1, 2, 3)] == [200, 300, 450]


def test_jitter_only_shortens_the_delay_within_its_fraction() -> None:
    for attempt in (1, 3, 12):
        full = delay(attempt)
        jittered = [delay(attempt, jitter=0.2, seed=f"exec-{i}") for i in range(500)]
        assert all(full * 0.8 <= d <= full for d in jittered)
        assert len(set(jittered)) > 50, "jitter should spread retries"
        assert min(jittered) < full * 0.85 and max(jittered) > full * 0.95


def test_jitter_is_the_same_for_the_same_seed() -> None:
    assert delay(4, jitter=0.5, seed="J:1:4") == delay(4, jitter=0.5, seed="J:1:4")
    assert 0.0 <= jitter_fraction("anything") < 1.0
    assert jitter_fraction("a") == jitter_fraction("a") != jitter_fraction("b")


def test_full_jitter_may_take_the_whole_delay_but_never_goes_negative() -> None:
    assert all(0 <= delay(2, jitter=1.0, seed=str(i)) <= 2000 for i in range(200))


@pytest.mark.parametrize(
    ("attempt", "jitter", "policy"),
    [(0, 0.0, {}), (1, 1.5, {}), (1, -0.1, {}), (1, 0.0, {"initial_ms": -1})],
)
def test_refuses_what_no_backoff_is_defined_for(attempt: int, jitter: float, policy: dict) -> None:
    with pytest.raises(ValueError):
        delay(attempt, jitter=jitter, **policy)
