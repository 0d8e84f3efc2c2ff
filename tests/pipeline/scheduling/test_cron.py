"""Cron next-fire: DST policies, bounds, jitter and validation, against hand-computed instants.

2026 transitions used below (all on Sundays):
Europe/Paris 2026-03-29 01:00Z (02:00 CET -> 03:00 CEST), 2026-10-25 01:00Z (03:00 CEST -> 02:00
CET); America/New_York 2026-03-08 07:00Z (02:00 EST -> 03:00 EDT), 2026-11-01 06:00Z (02:00 EDT
-> 01:00 EST).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from jobstream._pipeline.clock import instant_of, ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling.cron import (
    CronSpec,
    MisfirePolicy,
    RepeatedHourPolicy,
    SkippedHourPolicy,
    iter_occurrences,
    jitter_offset_ms,
    next_due_ms,
)

CET, CEST = timezone(timedelta(hours=1)), timezone(timedelta(hours=2))
EST, EDT = timezone(timedelta(hours=-5)), timezone(timedelta(hours=-4))
SCHEMA = Path(__file__).parents[3] / "schemas" / "io.jobstream.CronSchedule.avsc"
JOB = "01JOBJOBJOBJOBJOBJOBJOBJOB"


def ms(moment: datetime) -> int:
    assert moment.tzinfo is not None
    return ms_of(moment)


def fires(spec: CronSpec, after: datetime, count: int, job_id: str = JOB) -> list[int]:
    """``count`` fires chained through next_due_ms, as a timer would."""
    out: list[int] = []
    cursor = ms(after)
    for _ in range(count):
        fire = next_due_ms(spec, cursor, job_id=job_id)
        assert fire is not None
        out.append(fire)
        cursor = fire
    return out


def at(*moments: datetime) -> list[int]:
    return [ms(m) for m in moments]


# --- across the 2026 changes: the next fires, instant by instant -------------------------

RUN_AFTER, SKIP = SkippedHourPolicy.RUN_AFTER, SkippedHourPolicy.SKIP
FIRST, BOTH = RepeatedHourPolicy.FIRST, RepeatedHourPolicy.BOTH


def fires_at(name: str, expression: str, zone: str, skipped: SkippedHourPolicy,
             repeated: RepeatedHourPolicy, after: str, expected: str) -> Any:  # fmt: skip
    """A case of test_fires_across_a_change: from ``after``, the spec fires at ``expected``
    (instants in ISO 8601 with the offset the wall clock has then, ``expected`` spaced)."""
    spec = CronSpec(expression=expression, timezone=zone, skipped_hour=skipped,
                    repeated_hour=repeated)  # fmt: skip
    instants = [datetime.fromisoformat(instant) for instant in expected.split()]
    return pytest.param(spec, datetime.fromisoformat(after), instants, id=name)


ACROSS_A_CHANGE = [
    # A weekday morning keeps its wall time.
    fires_at("weekday-morning-paris-across-spring-forward",
             "0 9 * * MON-FRI", "Europe/Paris", RUN_AFTER, FIRST, "2026-03-26T12:00Z",
             "2026-03-27T09:00+01:00 2026-03-30T09:00+02:00 2026-03-31T09:00+02:00"),
    fires_at("weekday-morning-paris-across-fall-back",
             "0 9 * * MON-FRI", "Europe/Paris", RUN_AFTER, FIRST, "2026-10-22T12:00Z",
             "2026-10-23T09:00+02:00 2026-10-26T09:00+01:00 2026-10-27T09:00+01:00"),
    # A wall time in the spring-forward gap runs when the clock jumps (RUN_AFTER), or not
    # that day (SKIP): the jump is at 01:00Z in Paris, 07:00Z in New York.
    fires_at("paris-gap-run-after-fires-when-the-clock-jumps",
             "30 2 * * *", "Europe/Paris", RUN_AFTER, FIRST, "2026-03-28T02:30+01:00",
             "2026-03-29T03:00+02:00 2026-03-30T02:30+02:00"),
    fires_at("paris-gap-skip-drops-the-day",
             "30 2 * * *", "Europe/Paris", SKIP, FIRST, "2026-03-28T02:30+01:00",
             "2026-03-30T02:30+02:00 2026-03-31T02:30+02:00"),
    fires_at("new-york-gap-run-after",
             "30 2 * * *", "America/New_York", RUN_AFTER, FIRST, "2026-03-07T02:30-05:00",
             "2026-03-08T03:00-04:00 2026-03-09T02:30-04:00"),
    fires_at("new-york-gap-skip",
             "30 2 * * *", "America/New_York", SKIP, FIRST, "2026-03-07T02:30-05:00",
             "2026-03-09T02:30-04:00"),
    # Australia/Lord_Howe springs from 02:00 +10:30 to 02:30 +11:00 on 2026-10-04.
    fires_at("run-after-in-a-half-hour-gap",
             "15 2 * * *", "Australia/Lord_Howe", RUN_AFTER, FIRST, "2026-10-03T02:15+10:30",
             "2026-10-04T02:30+11:00 2026-10-05T02:15+11:00"),
    # A wall time in the repeated hour runs once (FIRST) or on both passes (BOTH).
    fires_at("paris-repeated-first-runs-once",
             "30 2 * * *", "Europe/Paris", RUN_AFTER, FIRST, "2026-10-24T02:30+02:00",
             "2026-10-25T02:30+02:00 2026-10-26T02:30+01:00"),
    fires_at("paris-repeated-both-runs-twice",
             "30 2 * * *", "Europe/Paris", RUN_AFTER, BOTH, "2026-10-24T02:30+02:00",
             "2026-10-25T02:30+02:00 2026-10-25T02:30+01:00 2026-10-26T02:30+01:00"),
    fires_at("new-york-repeated-first",
             "30 1 * * *", "America/New_York", RUN_AFTER, FIRST, "2026-10-31T01:30-04:00",
             "2026-11-01T01:30-04:00 2026-11-02T01:30-05:00"),
    fires_at("new-york-repeated-both",
             "30 1 * * *", "America/New_York", RUN_AFTER, BOTH, "2026-10-31T01:30-04:00",
             "2026-11-01T01:30-04:00 2026-11-01T01:30-05:00 2026-11-02T01:30-05:00"),
    # 02:30 is not in New York's repeated hour (01:00-02:00): it runs once under BOTH.
    fires_at("new-york-after-the-repeated-hour-both-runs-once",
             "30 2 * * *", "America/New_York", RUN_AFTER, BOTH, "2026-11-01T01:30-05:00",
             "2026-11-01T02:30-05:00 2026-11-02T02:30-05:00"),
    # 03:00 CET comes 75 minutes after 02:45 CEST.
    fires_at("quarter-hours-through-fall-back-first-fire-each-wall-time-once",
             "*/15 * * * *", "Europe/Paris", RUN_AFTER, FIRST, "2026-10-25T02:30+02:00",
             "2026-10-25T02:45+02:00 2026-10-25T03:00+01:00 2026-10-25T03:15+01:00"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "after", "expected"), ACROSS_A_CHANGE)
def test_fires_across_a_change(spec: CronSpec, after: datetime, expected: list[datetime]) -> None:
    assert fires(spec, after, len(expected)) == at(*expected)


def test_by_default_a_gap_runs_after_and_a_repeated_hour_runs_once() -> None:
    spec = CronSpec(expression="30 2 * * *", timezone="Europe/Paris")
    assert spec.skipped_hour == SkippedHourPolicy.RUN_AFTER
    assert spec.repeated_hour == RepeatedHourPolicy.FIRST


def test_occurrences_through_the_gap_are_not_repeated() -> None:
    spec = CronSpec(expression="*/15 * * * *", timezone="Europe/Paris")
    after = ms(datetime(2026, 3, 29, 1, 30, tzinfo=CET))
    got = list(itertools.islice(iter_occurrences(spec, after, job_id=JOB), 3))
    assert [o.nominal_ms for o in got] == at(
        datetime(2026, 3, 29, 1, 45, tzinfo=CET),
        datetime(2026, 3, 29, 3, 0, tzinfo=CEST),
        datetime(2026, 3, 29, 3, 15, tzinfo=CEST),
    )


def test_quarter_hours_through_the_gap_never_fire_twice_at_the_jump() -> None:
    spec = CronSpec(expression="*/15 * * * *", timezone="Europe/Paris")
    # 02:00..02:45 do not exist; RUN_AFTER folds them into 03:00 CEST, which 03:00 also is.
    assert fires(spec, datetime(2026, 3, 29, 1, 30, tzinfo=CET), 4) == at(
        datetime(2026, 3, 29, 1, 45, tzinfo=CET),
        datetime(2026, 3, 29, 3, 0, tzinfo=CEST),
        datetime(2026, 3, 29, 3, 15, tzinfo=CEST),
        datetime(2026, 3, 29, 3, 30, tzinfo=CEST),
    )


def test_quarter_hours_through_fall_back_both_follow_elapsed_time() -> None:
    spec = CronSpec(
        expression="*/15 * * * *", timezone="Europe/Paris", repeated_hour=RepeatedHourPolicy.BOTH
    )
    got = fires(spec, datetime(2026, 10, 25, 1, 45, tzinfo=CEST), 10)
    expected = [ms(datetime(2026, 10, 25, 0, 0, tzinfo=UTC)) + i * 15 * 60_000 for i in range(10)]
    assert got == expected  # 02:00..02:45 CEST, 02:00..02:45 CET, 03:00 CET, 03:15 CET
    assert got[4] == ms(datetime(2026, 10, 25, 2, 0, tzinfo=CET))


@pytest.mark.parametrize("policy", list(RepeatedHourPolicy))
@pytest.mark.parametrize(
    ("zone", "start"),
    [
        ("Europe/Paris", datetime(2026, 10, 24, 23, tzinfo=UTC)),
        ("America/New_York", datetime(2026, 11, 1, 3, tzinfo=UTC)),
    ],
)
def test_quarter_hours_across_fall_back_strictly_increase(
    zone: str, start: datetime, policy: RepeatedHourPolicy
) -> None:
    spec = CronSpec(expression="*/15 * * * *", timezone=zone, repeated_hour=policy)
    got = fires(spec, start, 24)
    assert all(b > a for a, b in itertools.pairwise(got))
    assert all((b - a) in (15 * 60_000, 75 * 60_000) for a, b in itertools.pairwise(got))
    assert ((75 * 60_000) in {b - a for a, b in itertools.pairwise(got)}) == (
        policy == RepeatedHourPolicy.FIRST
    )


# --- properties over zones, expressions and policies -------------------------------------

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
EXPRESSIONS = ["*/15 * * * *", "30 2 * * *", "0 * * * *", "0 9 * * MON-FRI", "45 1 1 * *"]
START_2026 = ms(datetime(2026, 1, 1, tzinfo=UTC))
YEAR_MS = 365 * 86_400_000
TRANSITIONS_2026 = [
    ms(datetime(2026, 3, 29, 1, tzinfo=UTC)),  # Paris
    ms(datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ms(datetime(2026, 3, 8, 7, tzinfo=UTC)),  # New York
    ms(datetime(2026, 11, 1, 6, tzinfo=UTC)),
    ms(datetime(2026, 4, 4, 15, tzinfo=UTC)),  # Lord Howe, 02:00 +11:00 -> 01:30 +10:30
    ms(datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),  # 02:00 +10:30 -> 02:30 +11:00
]
# Half the examples start within six hours of a DST change, where the policies matter.
AFTERS = st.one_of(
    st.integers(START_2026, START_2026 + YEAR_MS),
    st.builds(
        lambda t, d: t + d, st.sampled_from(TRANSITIONS_2026), st.integers(-6 * 3_600_000, 0)
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    expression=st.sampled_from(EXPRESSIONS),
    skipped=st.sampled_from(list(SkippedHourPolicy)),
    repeated=st.sampled_from(list(RepeatedHourPolicy)),
    jitter=st.sampled_from([0, 1, 7_000, 20 * 60_000, 86_400_000]),
    after=AFTERS,
    probe=st.floats(0, 1),
)
def test_fires_increase_and_any_instant_between_gives_the_next(
    zone: str,
    expression: str,
    skipped: SkippedHourPolicy,
    repeated: RepeatedHourPolicy,
    jitter: int,
    after: int,
    probe: float,
) -> None:
    spec = CronSpec(
        expression=expression,
        timezone=zone,
        skipped_hour=skipped,
        repeated_hour=repeated,
        jitter_ms=jitter,
    )
    occurrences = []
    for occurrence in iter_occurrences(spec, after, job_id=JOB):
        occurrences.append(occurrence)
        if len(occurrences) == 6:
            break
    got = [o.due_ms for o in occurrences]
    assert got[0] > after
    assert all(b > a for a, b in itertools.pairwise(got))
    for this, following in itertools.pairwise(occurrences):
        assert this.nominal_ms <= this.due_ms < following.nominal_ms
        assert this.due_ms - this.nominal_ms < max(jitter, 1)
        # Any instant from one fire up to just before the next yields the next.
        between = this.due_ms + int(probe * (following.due_ms - this.due_ms - 1))
        assert next_due_ms(spec, between, job_id=JOB) == following.due_ms


@settings(max_examples=50, deadline=None)
@given(
    expression=st.sampled_from([*EXPRESSIONS, "7 3 */2 * *", "0 0 29 2 *"]),
    after=st.integers(START_2026, START_2026 + YEAR_MS),
)
def test_in_utc_the_sequence_is_croniters(expression: str, after: int) -> None:
    spec = CronSpec(expression=expression)
    walls = croniter(expression, instant_of(after).replace(tzinfo=None))
    expected = [ms(walls.get_next(datetime).replace(tzinfo=UTC)) for _ in range(5)]
    assert fires(spec, instant_of(after), 5) == expected


# --- start, end, max_runs ----------------------------------------------------------------


def test_start_at_is_inclusive_and_end_at_ends() -> None:
    start = ms(datetime(2026, 5, 10, 9, tzinfo=UTC))
    end = ms(datetime(2026, 5, 12, 9, tzinfo=UTC))
    spec = CronSpec(expression="0 9 * * *", start_at_ms=start, end_at_ms=end)
    early = ms(datetime(2026, 1, 1, tzinfo=UTC))
    assert next_due_ms(spec, early, job_id=JOB) == start
    assert next_due_ms(spec, start, job_id=JOB) == ms(datetime(2026, 5, 11, 9, tzinfo=UTC))
    assert next_due_ms(spec, end - 1, job_id=JOB) == end
    assert next_due_ms(spec, end, job_id=JOB) is None


def test_max_runs_counts_runs_so_far() -> None:
    spec = CronSpec(expression="0 9 * * *", max_runs=2)
    after = ms(datetime(2026, 5, 10, 12, tzinfo=UTC))
    assert next_due_ms(spec, after, job_id=JOB, runs_so_far=1) == ms(
        datetime(2026, 5, 11, 9, tzinfo=UTC)
    )
    assert next_due_ms(spec, after, job_id=JOB, runs_so_far=2) is None


def test_jitter_never_passes_end_at() -> None:
    end = ms(datetime(2026, 5, 12, 9, 0, 0, 5000, tzinfo=UTC))  # 5 ms after the last nominal
    spec = CronSpec(expression="0 9 * * *", end_at_ms=end, jitter_ms=3_600_000)
    fire = next_due_ms(spec, end - 3_600_000, job_id=JOB)
    assert fire is not None
    assert end - 5 <= fire <= end


# --- jitter ------------------------------------------------------------------------------


def test_jitter_offset_is_stable_and_in_range() -> None:
    offsets = [jitter_offset_ms(f"job-{i}", 1_780_000_000_000, 30_000) for i in range(500)]
    assert all(0 <= o < 30_000 for o in offsets)
    assert len(set(offsets)) > 400  # spread, not constant
    assert offsets == [jitter_offset_ms(f"job-{i}", 1_780_000_000_000, 30_000) for i in range(500)]
    assert jitter_offset_ms("job-1", 1_780_000_000_000, 0) == 0
    with pytest.raises(ValueError):
        jitter_offset_ms("job-1", 1_780_000_000_000, -1)


def test_jitter_formula_is_pinned() -> None:
    # A change here moves every jittered fire: replays and upgrades would disagree.
    digest = hashlib.blake2b(
        b"job-1\x001780000000000", digest_size=8, person=b"jobstream.jitter"
    ).digest()
    assert jitter_offset_ms("job-1", 1_780_000_000_000, 30_000) == (
        int.from_bytes(digest, "big") % 30_000
    )


def test_next_fire_applies_jitter_to_the_nominal_instant() -> None:
    spec = CronSpec(expression="0 9 * * *", jitter_ms=600_000)
    nominal = ms(datetime(2026, 5, 11, 9, tzinfo=UTC))
    expected = nominal + jitter_offset_ms(JOB, nominal, 600_000)
    assert next_due_ms(spec, nominal - 86_400_000 + 600_000, job_id=JOB) == expected
    assert next_due_ms(spec, nominal - 86_400_000 + 600_000, job_id="other") != expected


def test_jitter_wider_than_the_interval_keeps_order() -> None:
    spec = CronSpec(expression="* * * * *", jitter_ms=600_000)
    nine = datetime(2026, 5, 11, 9, tzinfo=UTC)
    # Just before 09:00 the 08:59 run has fired (it fires before 09:00 whatever its offset).
    got = fires(spec, nine - timedelta(milliseconds=1), 30)
    nominals = [ms(nine) + i * 60_000 for i in range(30)]
    assert all(n <= f < n + 60_000 for n, f in zip(nominals, got, strict=True))
    assert len({f - n for n, f in zip(nominals, got, strict=True)}) > 20  # jitter did apply


# --- validation and Avro -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"expression": "61 * * * *"}, "spec.cron.expression"),
        ({"expression": "not cron"}, "spec.cron.expression"),
        ({"expression": "0 0 * * * 30"}, "spec.cron.expression"),
        ({"expression": "0 0 30 2 *"}, "spec.cron.expression"),
        ({"expression": ""}, "spec.cron.expression"),
        ({"timezone": "Mars/Olympus_Mons"}, "spec.cron.timezone"),
        ({"timezone": "../etc/passwd"}, "spec.cron.timezone"),
        ({"start_at_ms": 2000, "end_at_ms": 1000}, "spec.cron.end_at_ms"),
        ({"jitter_ms": -1}, "spec.cron.jitter_ms"),
        ({"catchup_window_ms": -1}, "spec.cron.catchup_window_ms"),
        ({"max_runs": 0}, "spec.cron.max_runs"),
        ({"misfire": "SOMETIMES"}, "spec.cron.misfire"),
    ],
)
def test_invalid_schedules_name_the_field(fields: dict[str, Any], field: str) -> None:
    record = {"expression": "0 9 * * *", **fields}
    with pytest.raises(ValidationError) as caught:
        CronSpec.from_avro(record)
    assert caught.value.field == field


def test_aliases_and_valid_edges_are_accepted() -> None:
    assert CronSpec(expression="@daily").expression == "@daily"
    assert CronSpec(expression="0 0 29 2 *", start_at_ms=5, end_at_ms=5).end_at_ms == 5


def test_avro_round_trip_and_defaults_match_the_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    defaults = {f["name"]: f["default"] for f in schema["fields"] if "default" in f}
    spec = CronSpec.from_avro({"expression": "0 9 * * MON-FRI"})
    assert spec.to_avro() == {"expression": "0 9 * * MON-FRI", **defaults}
    assert [f["name"] for f in schema["fields"]] == list(spec.to_avro())

    full = {
        "expression": "*/5 * * * *",
        "timezone": "Europe/Paris",
        "start_at_ms": 1,
        "end_at_ms": 2,
        "max_runs": 3,
        "skipped_hour": "SKIP",
        "repeated_hour": "BOTH",
        "misfire": "RUN_ALL",
        "catchup_window_ms": 4,
        "overlap": "SKIP",
        "jitter_ms": 5,
    }
    spec = CronSpec.from_avro(full)
    assert spec.misfire is MisfirePolicy.RUN_ALL
    assert spec.to_avro() == full
    assert type(spec.to_avro()["misfire"]) is str  # a plain symbol, as fastavro expects
