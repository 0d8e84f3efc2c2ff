"""The token bucket on a clock the test moves: a burst, then the rate, never more."""

from __future__ import annotations

import pytest

from jobstream._pipeline.limits.bucket import TokenBucket

T0 = 1_000_000


def takes(bucket: TokenBucket, now_ms: int) -> int:
    count = 0
    while bucket.take(now_ms):
        count += 1
    return count


def test_a_full_bucket_gives_its_burst_then_one_token_per_interval() -> None:
    bucket = TokenBucket.full(rate=50, capacity=5, now_ms=T0)
    assert takes(bucket, T0) == 5
    assert bucket.wait_ms(T0) == 20
    assert takes(bucket, T0 + 19) == 0
    assert takes(bucket, T0 + 20) == 1
    assert takes(bucket, T0 + 60) == 2


def test_over_any_span_it_gives_at_most_burst_plus_rate_times_span() -> None:
    bucket = TokenBucket.full(rate=50, capacity=5, now_ms=T0)
    given = [takes(bucket, T0 + ms) for ms in range(0, 10_001, 7)]
    assert sum(given) == 5 + 10_001 * 50 // 1000 - 1  # the last token is due at 10,000 + 0 ms
    assert max(given) == 5


def test_tokens_stop_at_the_capacity_after_a_quiet_spell() -> None:
    bucket = TokenBucket.full(rate=100, capacity=3, now_ms=T0)
    takes(bucket, T0)
    assert takes(bucket, T0 + 60_000) == 3


def test_a_clock_going_back_earns_nothing() -> None:
    bucket = TokenBucket.full(rate=10, capacity=1, now_ms=T0)
    assert bucket.take(T0)
    assert not bucket.take(T0 - 5_000)
    assert bucket.take(T0 + 100)


def test_rescaling_keeps_earned_tokens_up_to_the_new_capacity() -> None:
    bucket = TokenBucket.full(rate=10, capacity=10, now_ms=T0)
    bucket.rescale(rate=1000, capacity=2, now_ms=T0)
    assert takes(bucket, T0) == 2
    assert takes(bucket, T0 + 5) == 2  # 5 ms at 1,000/s earn 5 tokens: the capacity holds 2


def test_a_rate_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="rate must be positive"):
        TokenBucket.full(rate=0, capacity=1, now_ms=T0)
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        TokenBucket.full(rate=5, capacity=0.5, now_ms=T0)


def test_a_take_of_many_tokens_takes_them_all_or_none() -> None:
    bucket = TokenBucket.full(rate=10, capacity=20, now_ms=T0)
    assert bucket.take(T0, 15)
    assert not bucket.take(T0, 6)
    assert bucket.wait_ms(T0, 6) == 100  # one token missing, at 10 a second
    assert bucket.take(T0 + 100, 6)
    assert bucket.tokens == 0


def test_a_take_over_the_capacity_passes_on_a_full_bucket_and_leaves_a_debt() -> None:
    bucket = TokenBucket.full(rate=10, capacity=20, now_ms=T0)
    assert bucket.take(T0)  # 19 left: not full
    assert not bucket.take(T0, 50)
    assert bucket.wait_ms(T0, 50) == 100  # until the bucket is full again
    assert bucket.take(T0 + 100, 50)
    assert bucket.tokens == -30
    assert bucket.wait_ms(T0 + 100) == 3100  # the debt is paid before the next token
