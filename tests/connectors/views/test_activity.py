"""Recent activity from lifecycle events: rates and lateness percentiles per bucket."""

from __future__ import annotations

from jobstream._connectors.views.activity import Activity, percentile
from tests.connectors.views.records import event, submitted

T0 = 1_767_225_600_000


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5, 1, 3], 0.5) == 3
    assert percentile(list(range(1, 101)), 0.99) == 99


def test_rates_and_lateness_per_bucket_and_owner() -> None:
    activity = Activity(bucket_ms=1000, window_ms=10_000)
    job, other = submitted("acme", at_ms=T0), submitted("bolt", at_ms=T0)
    now = T0 + 5000
    activity.record(event(job, "FIRED", at_ms=T0 + 1100, due_ms=T0 + 1000, lateness_ms=100), now)
    activity.record(event(job, "STARTED", at_ms=T0 + 1400, due_ms=T0 + 1000), now)
    activity.record(event(job, "SUCCEEDED", at_ms=T0 + 2100, due_ms=T0 + 1000), now)
    activity.record(event(other, "FIRED", at_ms=T0 + 1200, due_ms=T0, lateness_ms=1200), now)
    activity.record(event(other, "HEARTBEAT", at_ms=T0 + 1300, due_ms=T0), now)
    activity.record(event(other, "FIRED", at_ms=T0 - 60_000, lateness_ms=5), now)  # too old

    rows = {row["at_ms"]: row for row in activity.series(None, now)}
    second = rows[T0 + 1000]
    assert (second["fired_per_s"], second["started_per_s"], second["ended_per_s"]) == (2, 1, 0)
    assert (second["fire_lateness_p50_ms"], second["fire_lateness_p99_ms"]) == (100, 1200)
    assert second["start_lateness_p99_ms"] == 400
    assert rows[T0 + 2000]["ended_per_s"] == 1
    assert sum(row["fired_per_s"] for row in rows.values()) == 2
    mine = {row["at_ms"]: row for row in activity.series("acme", now)}
    assert mine[T0 + 1000]["fire_lateness_p99_ms"] == 100
    # buckets older than the window are dropped as time goes on
    activity.record(event(job, "FIRED", at_ms=T0 + 30_000, lateness_ms=1), T0 + 30_000)
    assert sum(row["fired_per_s"] for row in activity.series(None, T0 + 30_000)) == 1


def test_a_runs_start_lateness_is_its_launch_once_a_worker_tells_it() -> None:
    """STARTED of a run claimed ahead says its due instant (0 ms late); its HEARTBEAT and
    its SUCCEEDED say its handler began 1,400 ms late: that figure replaces the STARTED's,
    once however many events tell it, in the bucket of the launch. A run whose worker tells
    no launch keeps its STARTED's figure."""
    activity = Activity(bucket_ms=1000, window_ms=10_000)
    job, old = submitted("acme", at_ms=T0), submitted("acme", at_ms=T0)
    now, due = T0 + 9000, T0 + 1000
    activity.record(event(job, "STARTED", at_ms=due, due_ms=due), now)
    activity.record(event(old, "STARTED", at_ms=due + 300, due_ms=due), now)
    rows = {row["at_ms"]: row for row in activity.series(None, now)}
    assert (rows[due]["start_lateness_p50_ms"], rows[due]["start_lateness_p99_ms"]) == (0, 300)

    launched = due + 1400
    told = (("HEARTBEAT", due + 3000), ("HEARTBEAT", due + 4000), ("SUCCEEDED", due + 4500))
    for kind, at in told:
        activity.record(event(job, kind, at_ms=at, due_ms=due, launched_at_ms=launched), now)
    rows = {row["at_ms"]: row for row in activity.series(None, now)}
    assert (rows[due]["start_lateness_p50_ms"], rows[due]["start_lateness_p99_ms"]) == (300, 300)
    assert rows[due + 1000]["start_lateness_p99_ms"] == 1400, "in the bucket of its launch"
    assert sum(row["started_per_s"] for row in rows.values()) == 2
    assert rows[due + 4000]["ended_per_s"] == 1
