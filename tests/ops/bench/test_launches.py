"""The launch lateness read off the workers' histogram (pure part)."""

from __future__ import annotations

from jobstream._ops.bench.launches import summarize_buckets

INF = float("inf")


def test_quantiles_name_the_bucket_they_fall_within() -> None:
    buckets = {0.005: 50.0, 0.01: 90.0, 0.025: 99.0, 0.05: 100.0, INF: 100.0}
    summary = summarize_buckets(buckets)
    assert summary["count"] == 100
    assert summary["share_within_ms"] == {"5": 0.5, "10": 0.9, "25": 0.99, "50": 1.0}
    assert (summary["p50_within_ms"], summary["p90_within_ms"], summary["p99_within_ms"]) == (
        5.0, 10.0, 25.0)  # fmt: skip
    assert summary["max_within_ms"] == 50.0, "the bucket every launch is within"


def test_a_quantile_past_the_last_bound_is_none_and_no_launch_is_a_count_of_zero() -> None:
    summary = summarize_buckets({0.005: 10.0, 300.0: 90.0, INF: 100.0})
    assert summary["p50_within_ms"] == 300_000.0 and summary["p99_within_ms"] is None
    assert summary["max_within_ms"] is None
    assert summarize_buckets({}) == {"count": 0}
