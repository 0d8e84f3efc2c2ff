"""The occurrences a backfill runs: the schedule's own, in a past range, bounded."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from jobstream._pipeline.clock import instant_of, ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling import CronSpec, RepeatedHourPolicy, SkippedHourPolicy
from jobstream._pipeline.scheduling.backfill import (
    MAX_OCCURRENCES,
    backfill_occurrences,
    check_rate,
    paced_run_at_ms,
    parse_instant_ms,
)

HOUR_MS = 3_600_000
NOW = parse_instant_ms("2026-11-26T00:00Z", "now")


def ms(text: str) -> int:
    return ms_of(datetime.fromisoformat(text))


def occurrences(spec: CronSpec, start: str, end: str, **kw: int) -> tuple[int, ...]:
    return backfill_occurrences(spec, job_id="J", from_ms=ms(start), to_ms=ms(end),
                                now_ms=kw.pop("now_ms", NOW), **kw)  # fmt: skip


def test_an_hourly_job_over_a_day_has_24_occurrences_on_the_hour() -> None:
    found = occurrences(CronSpec(expression="0 * * * *"), "2026-03-01T00:00Z", "2026-03-02T00:00Z")
    assert found == tuple(ms("2026-03-01T00:00Z") + i * HOUR_MS for i in range(24))


def test_the_range_is_half_open_and_any_instant_may_bound_it() -> None:
    spec = CronSpec(expression="0 * * * *")
    assert len(occurrences(spec, "2026-03-01T00:00:00.001Z", "2026-03-02T00:00:00.001Z")) == 24
    assert occurrences(spec, "2026-03-01T00:30Z", "2026-03-01T01:00Z") == ()
    assert occurrences(spec, "2026-03-01T00:30Z", "2026-03-01T01:00:00.001Z") == (
        ms("2026-03-01T01:00Z"),)  # fmt: skip


def test_the_schedule_s_zone_places_the_occurrences() -> None:
    spec = CronSpec(expression="0 9 * * MON-FRI", timezone="Europe/Paris")
    found = occurrences(spec, "2026-03-02T00:00Z", "2026-03-09T00:00Z")  # Monday to Monday
    assert found == tuple(ms(f"2026-03-0{d}T08:00Z") for d in range(2, 7))


# Europe/Paris, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); the local day is
# 23 hours long, from 2026-03-28T23:00Z to 2026-03-29T22:00Z.
SPRING = ("2026-03-28T23:00Z", "2026-03-29T22:00Z")
# 2026-10-25: 03:00 CEST goes back to 02:00 CET (01:00 UTC); a 25-hour day.
AUTUMN = ("2026-10-24T22:00Z", "2026-10-25T23:00Z")


@pytest.mark.parametrize(("window", "hourly", "policy", "expected"), [
    # spring forward: 02:30 does not exist; RUN_AFTER runs it at the jump
    (SPRING, "30 * * * *", {"skipped_hour": SkippedHourPolicy.RUN_AFTER}, ["2026-03-29T01:00Z"]),
    (SPRING, "30 * * * *", {"skipped_hour": SkippedHourPolicy.SKIP}, []),
    # fall back: 02:30 occurs twice
    (AUTUMN, "0 * * * *", {"repeated_hour": RepeatedHourPolicy.FIRST}, ["2026-10-25T00:30Z"]),
    (AUTUMN, "0 * * * *", {"repeated_hour": RepeatedHourPolicy.BOTH},
     ["2026-10-25T00:30Z", "2026-10-25T01:30Z"]),
])  # fmt: skip
def test_a_daylight_saving_change_follows_the_job_s_policy(
    window: tuple[str, str], hourly: str, policy: dict[str, Any], expected: list[str]
) -> None:
    spec = CronSpec(expression="30 2 * * *", timezone="Europe/Paris", **policy)
    assert occurrences(spec, *window) == tuple(ms(t) for t in expected)
    every_hour = CronSpec(expression=hourly, timezone="Europe/Paris", **policy)
    assert len(occurrences(every_hour, *window)) == 23 + len(expected)


def test_occurrences_are_nominal_instants_jitter_left_out() -> None:
    spec = CronSpec(expression="0 * * * *", jitter_ms=600_000)
    found = occurrences(spec, "2026-03-01T00:00Z", "2026-03-01T03:00Z")
    assert found == tuple(ms("2026-03-01T00:00Z") + i * HOUR_MS for i in range(3))


def test_start_and_end_of_the_schedule_bound_the_backfill_too() -> None:
    spec = CronSpec(expression="0 * * * *", start_at_ms=ms("2026-03-01T10:00Z"),
                    end_at_ms=ms("2026-03-01T12:00Z"))  # fmt: skip
    found = occurrences(spec, "2026-03-01T00:00Z", "2026-03-02T00:00Z")
    assert found == (ms("2026-03-01T10:00Z"), ms("2026-03-01T11:00Z"), ms("2026-03-01T12:00Z"))


def test_the_number_of_occurrences_is_bounded() -> None:
    minutely = CronSpec(expression="* * * * *")
    week = occurrences(minutely, "2026-03-01T00:00Z", "2026-03-07T22:40Z")
    assert len(week) == MAX_OCCURRENCES  # exactly the bound: accepted
    with pytest.raises(ValidationError) as caught:
        occurrences(minutely, "2026-03-01T00:00Z", "2026-03-07T22:41Z")
    assert caught.value.field == "to" and f"{MAX_OCCURRENCES}" in caught.value.message
    with pytest.raises(ValidationError):
        occurrences(CronSpec(expression="0 * * * *"), "2026-03-01T00:00Z", "2026-03-02T00:00Z",
                    limit=23)  # fmt: skip


@pytest.mark.parametrize(("start", "end", "why"), [
    ("2026-03-02T00:00Z", "2026-03-01T00:00Z", "after from"),
    ("2026-03-01T00:00Z", "2026-03-01T00:00Z", "after from"),
    ("2026-11-25T00:00Z", "2026-11-26T00:00:00.001Z", "future"),
])  # fmt: skip
def test_a_bad_range_names_to(start: str, end: str, why: str) -> None:
    with pytest.raises(ValidationError) as caught:
        occurrences(CronSpec(expression="0 * * * *"), start, end)
    assert caught.value.field == "to" and why in caught.value.message


def test_a_range_up_to_now_is_accepted() -> None:
    assert len(occurrences(CronSpec(expression="0 * * * *"), "2026-11-25T00:00Z",
                           "2026-11-26T00:00Z")) == 24  # fmt: skip


@pytest.mark.parametrize("text", ["2026-03-01T00:00", "yesterday", "", "2026-13-01T00:00Z"])
def test_an_instant_needs_iso_8601_with_a_zone(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant_ms(text, "from")
    assert caught.value.field == "from"


def test_instants_with_offsets_are_read_as_instants() -> None:
    assert parse_instant_ms("2026-03-01T01:00+01:00", "from") == ms("2026-03-01T00:00Z")
    assert parse_instant_ms("2026-03-01T00:00:00.250Z", "from") == ms("2026-03-01T00:00Z") + 250
    assert instant_of(parse_instant_ms("2026-03-01T00:00Z", "f")).day == 1


@pytest.mark.parametrize("rate", [0, -1, 0.001, 1001, float("nan"), float("inf"), True, "5"])
def test_a_rate_out_of_bounds_names_rate(rate: object) -> None:
    with pytest.raises(ValidationError) as caught:
        check_rate(rate)
    assert caught.value.field == "rate"


def test_occurrences_are_paced_at_the_rate() -> None:
    assert [paced_run_at_ms(i, now_ms=1000, rate=4) for i in range(5)] == [
        1000, 1250, 1500, 1750, 2000]  # fmt: skip
    assert paced_run_at_ms(1, now_ms=0, rate=3) == 334  # never earlier than the rate allows
    assert check_rate(0.01) == 0.01 and check_rate(1000) == 1000.0
