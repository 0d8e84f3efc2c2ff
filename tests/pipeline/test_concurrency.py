"""Concurrency limits as slots per partition index: the split, the routing, the setting."""

from __future__ import annotations

import pytest

from jobstream._pipeline.concurrency import ConcurrencyLimits, routed_partition, slot_count
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.errors import ConfigurationError


@pytest.mark.parametrize("partitions", [1, 2, 3, 6, 7, 12])
@pytest.mark.parametrize("limit", [1, 2, 3, 5, 6, 7, 13, 100])
def test_the_slots_of_every_index_sum_to_the_limit(limit: int, partitions: int) -> None:
    counts = [slot_count(limit, p, partitions) for p in range(partitions)]
    assert sum(counts) == limit
    assert max(counts) - min(counts) <= 1  # an even split
    assert counts == sorted(counts, reverse=True)  # the remainder on the lowest indices


def test_a_limit_below_the_partition_count_gives_one_slot_to_the_first_indices() -> None:
    assert [slot_count(3, p, 6) for p in range(6)] == [1, 1, 1, 0, 0, 0]
    assert [slot_count(8, p, 6) for p in range(6)] == [2, 2, 1, 1, 1, 1]


def test_an_index_outside_the_topic_is_refused() -> None:
    with pytest.raises(ValueError, match=r"partition 6 is outside 0\.\.5"):
        slot_count(3, 6, 6)


def test_routing_keeps_to_the_indices_with_slots_and_follows_the_key() -> None:
    keys = [f"job-{i}".encode() for i in range(600)]
    routed = [routed_partition(3, key, 6) for key in keys]
    assert set(routed) == {0, 1, 2}
    assert min(routed.count(p) for p in (0, 1, 2)) > 150  # spread, not all on one
    assert routed == [routed_partition(3, key, 6) for key in keys]  # a replay routes alike


def test_routing_is_left_to_the_producer_when_every_index_has_a_slot() -> None:
    assert routed_partition(6, b"job", 6) is None
    assert routed_partition(9, b"job", 6) is None


def test_limits_by_type() -> None:
    limits = ConcurrencyLimits({"report.generate": 2}, partitions=6)
    assert limits.limit_of("report.generate") == 2
    assert limits.slots("report.generate", 1) == 1
    assert limits.slots("report.generate", 2) == 0
    assert limits.partition_for("report.generate", b"k") in (0, 1)
    assert limits.limit_of("image.render") is None
    assert limits.slots("image.render", 0) is None
    assert limits.partition_for("image.render", b"k") is None


def test_the_setting_reads_a_comma_list_or_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_CONCURRENCY_LIMITS", " report.generate=4, image.render = 2,")
    assert load_settings().concurrency_limits == {"report.generate": 4, "image.render": 2}
    monkeypatch.setenv("JOBSTREAM_CONCURRENCY_LIMITS", '{"report.generate": 4}')
    assert load_settings().concurrency_limits == {"report.generate": 4}
    monkeypatch.delenv("JOBSTREAM_CONCURRENCY_LIMITS")
    assert load_settings().concurrency_limits == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("report.generate", "expected type=limit"),
        ("report.generate=four", "must be a whole number, got 'four'"),
        ("report.generate=-1", "must be a whole number, got '-1'"),
        ("report.generate=2,report.generate=3", "report.generate is limited twice"),
        ("=3", "expected type=limit"),
    ],
)
def test_a_bad_setting_stops_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("JOBSTREAM_CONCURRENCY_LIMITS", value)
    with pytest.raises(ConfigurationError, match=f"JOBSTREAM_CONCURRENCY_LIMITS: .*{message}"):
        load_settings()


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"report.generate": 0}, "the limit of report.generate must be a whole number of at least"),
        ({"Report": 2}, "job type must be words of a-z"),
    ],
)
def test_limits_that_mean_nothing_stop_the_process_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, limits: dict[str, int], message: str
) -> None:
    value = ",".join(f"{job_type}={limit}" for job_type, limit in limits.items())
    monkeypatch.setenv("JOBSTREAM_CONCURRENCY_LIMITS", value)
    with pytest.raises(ConfigurationError, match=f"JOBSTREAM_CONCURRENCY_LIMITS: {message}"):
        ConcurrencyLimits.of(load_settings())
