"""Rate keys: a bucket per key in the throttle, apart from the jobs.limits limits, bounded
by dropping full buckets (pipeline/limits/keyed.py)."""

from __future__ import annotations

from jobstream._pipeline.limits.keyed import RATE_KEY_PREFIX, KeyBuckets, RateKey, rate_key
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.limits.throttle import LimitBoard, Throttle
from jobstream._pipeline.model.records import JobKeys

T0 = 1_798_000_000_000
FIVE = JobKeys(rate_key="api", rate="5/s")  # a burst of 3, then one each 200 ms


def admitted(throttle: Throttle, keys: JobKeys | None, now_ms: int, owner: str = "acme") -> int:
    return sum(throttle.admit(owner, "render", now_ms, keys) is None for _ in range(50))


def test_a_rate_key_gives_its_burst_then_its_rate() -> None:
    throttle = Throttle()
    assert admitted(throttle, FIVE, T0) == 3
    held = throttle.admit("acme", "render", T0, FIVE)
    assert isinstance(held, RateKey) and str(held) == "rate:api"
    assert admitted(throttle, FIVE, T0 + 199) == 0
    assert admitted(throttle, FIVE, T0 + 200) == 1
    assert admitted(throttle, FIVE, T0 + 1200) == 3  # a second: 5 tokens, capped at the burst


def test_keys_are_per_owner_and_per_key() -> None:
    throttle = Throttle()
    assert admitted(throttle, FIVE, T0) == 3
    assert admitted(throttle, FIVE, T0, owner="bolt") == 3
    assert admitted(throttle, JobKeys(rate_key="other", rate="5/s"), T0) == 3
    assert admitted(throttle, None, T0) == 50  # no key, no limit


def test_a_rate_key_and_a_limit_both_hold_and_name_the_first_out_of_tokens() -> None:
    throttle = Throttle(LimitBoard([Limit(LimitKey(job_type="render"), rate=100, burst=1)]))
    assert throttle.admit("acme", "render", T0, FIVE) is None
    assert throttle.admit("acme", "render", T0, FIVE) == LimitKey(job_type="render")
    assert throttle.admit("acme", "render", T0 + 10, FIVE) is None
    assert throttle.admit("acme", "render", T0 + 20, FIVE) is None  # the key's third token
    assert isinstance(throttle.admit("acme", "render", T0 + 30, FIVE), RateKey)
    assert throttle.admit("acme", "render", T0 + 30) is None, "the type's token was not taken"


def test_a_process_enforces_its_share_of_a_key() -> None:
    throttle = Throttle()
    throttle.set_share(owned=1, partitions=2)  # 2.5/s, a burst of 1.5
    assert admitted(throttle, FIVE, T0) == 1
    assert admitted(throttle, FIVE, T0 + 400) == 1


def test_a_rate_key_id_never_meets_a_limit_id() -> None:
    key = rate_key("acme", FIVE)
    assert key is not None and key.id.startswith(RATE_KEY_PREFIX)
    assert key.id != LimitKey(owner="acme").id and not LimitKey(owner="acme").id.startswith("\x01")
    assert rate_key("acme", JobKeys(concurrency_key="x")) is None
    assert rate_key("acme", JobKeys(rate_key="x", rate="fast")) is None  # unreadable: none


def test_full_buckets_are_dropped_and_a_new_one_starts_full() -> None:
    buckets = KeyBuckets(sweep_at=10)
    for i in range(10):
        buckets.bucket(RateKey("acme", f"k{i}", 5.0), 1.0, T0).take(T0)
    busy = buckets.bucket(RateKey("acme", "busy", 5.0), 1.0, T0 + 1000)  # the sweep: all full
    assert len(buckets) == 1
    for _ in range(3):
        busy.take(T0 + 1000)
    for i in range(30):  # none full: each sweep keeps them, and the next comes at twice as many
        buckets.bucket(RateKey("acme", f"n{i}", 5.0), 1.0, T0 + 1000).take(T0 + 1000)
    assert len(buckets) == 31
    assert buckets.bucket(RateKey("acme", "busy", 5.0), 1.0, T0 + 1000) is busy
    buckets.sweep(T0 + 1300)  # n*: full again after 200 ms; busy, empty, is not
    assert len(buckets) == 1
    assert buckets.bucket(RateKey("acme", "busy", 5.0), 1.0, T0 + 1300) is busy
