"""Recurring schedules: a cron expression read in an IANA time zone, and its next fire instant.

croniter only ever sees *naive wall times*: it does the calendar arithmetic (which minute of
which day matches), and this module maps each wall time to instants with zoneinfo and applies
the DST policies below explicitly. croniter's own time-zone handling is not used because its
DST behaviour has changed between releases and matches neither policy set we document.

Spring forward, ``skipped_hour`` (a wall time that does not exist, e.g. 02:30 in
Europe/Paris on 2026-03-29, when clocks jump from 02:00 CET to 03:00 CEST):

- ``RUN_AFTER``: the occurrence runs at the instant the clock jumps (03:00 CEST, 01:00 UTC).
  Several missing wall times (``*/15`` at 02:00..02:45) collapse into that single instant,
  which is also 03:00 itself: a schedule never fires twice at one instant.
- ``SKIP``: the occurrence is dropped.

Fall back, ``repeated_hour`` (a wall time that occurs twice, e.g. 02:30 in Europe/Paris on
2026-10-25, when clocks go back from 03:00 CEST to 02:00 CET):

- ``FIRST``: only the first occurrence (fold=0, the summer-time one) runs. Every wall time
  fires once, so ``*/15`` is silent through the second pass of the hour (75 minutes between
  02:45 CEST and 03:00 CET) and ``0 * * * *`` has two hours between 02:00 CEST and 03:00 CET.
- ``BOTH``: both occurrences run; ``*/15`` then fires every 15 minutes of elapsed time through
  the repeated hour, in instant order (02:00..02:45 CEST, then 02:00..02:45 CET).

Whatever the policies, the nominal sequence is strictly increasing.

Jitter: an occurrence fires at ``nominal + jitter_offset_ms(job_id, nominal, window)`` with
``window = min(jitter_ms, next_nominal - nominal, end_at_ms - nominal + 1)``. Capping by the gap
to the next nominal gives ``fire[i] < nominal[i+1] <= fire[i+1]``: jitter can never reorder runs
or pile them up, and fire instants are strictly increasing too. ``after_ms`` is compared with
*fire* instants, so passing the fire instant last returned yields the following one.

Bounds: ``start_at_ms <= nominal`` and ``fire <= end_at_ms``. The number of runs is counted by
the caller (``runs_so_far``): occurrences skipped by a misfire policy are not runs.
Day of month and day of week combine with OR when both are restricted (vixie cron, croniter's
default).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterBadDateError

from jobstream._pipeline.avro_bounds import INT_MAX, LONG_MAX
from jobstream._pipeline.clock import ONE_MS, instant_of, ms_of
from jobstream._pipeline.errors import ValidationError

FIELD_PREFIX = "spec.cron."
"""Prefix of the field named by a ValidationError: the CronSchedule's path in JobSubmitted."""

_NAIVE_EPOCH = datetime(1970, 1, 1)
_DAY_MS = 86_400_000
_JITTER_PERSON = b"jobstream.jitter"


class SkippedHourPolicy(StrEnum):
    """Spring forward: a wall time that does not exist."""

    RUN_AFTER = "RUN_AFTER"
    SKIP = "SKIP"


class RepeatedHourPolicy(StrEnum):
    """Fall back: a wall time that occurs twice."""

    FIRST = "FIRST"
    BOTH = "BOTH"


class MisfirePolicy(StrEnum):
    """Runs missed while the scheduler was down; see jobstream._pipeline.scheduling.misfire."""

    SKIP = "SKIP"
    RUN_ONCE = "RUN_ONCE"
    RUN_ALL = "RUN_ALL"


class OverlapPolicy(StrEnum):
    """Whether a worker starts a run while the previous run of the schedule still runs."""

    ALLOW = "ALLOW"
    SKIP = "SKIP"


@dataclass(frozen=True, kw_only=True)
class CronSpec:
    """A recurring schedule; mirrors the Avro record io.jobstream.CronSchedule."""

    expression: str
    """Five-field cron expression (minute hour day-of-month month day-of-week) or an alias
    such as ``@daily``. Six- and seven-field forms are rejected: croniter reads a sixth field
    as seconds, which a Quartz user would read as the first field."""
    timezone: str = "UTC"
    """IANA time zone the expression is read in."""
    start_at_ms: int | None = None
    """No nominal due instant before this instant (epoch ms)."""
    end_at_ms: int | None = None
    """No fire (jitter included) after this instant (epoch ms)."""
    max_runs: int | None = None
    """Stop after this many runs."""
    skipped_hour: SkippedHourPolicy = SkippedHourPolicy.RUN_AFTER
    """Spring-forward policy, see the module docstring."""
    repeated_hour: RepeatedHourPolicy = RepeatedHourPolicy.FIRST
    """Fall-back policy, see the module docstring."""
    misfire: MisfirePolicy = MisfirePolicy.RUN_ONCE
    """What to do with runs missed during downtime."""
    catchup_window_ms: int = 3_600_000
    """RUN_ALL: how far back missed runs are considered."""
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    """Whether runs of this schedule may overlap (enforced by the worker, not here)."""
    jitter_ms: int = 0
    """Spread each fire over [0, jitter_ms) after its nominal instant."""

    def __post_init__(self) -> None:
        for name, enum in _ENUM_FIELDS.items():
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                symbols = "|".join(enum)
                raise ValidationError(FIELD_PREFIX + name, f"must be one of {symbols}") from None
        self._validate()

    def _validate(self) -> None:
        _check_expression(self.expression)
        _check_timezone(self.timezone)
        for name in ("start_at_ms", "end_at_ms", "max_runs"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise ValidationError(FIELD_PREFIX + name, "must be an integer or null")
        for name in ("catchup_window_ms", "jitter_ms"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                raise ValidationError(FIELD_PREFIX + name, "must be an integer >= 0")
            if value > LONG_MAX:
                raise ValidationError(FIELD_PREFIX + name, f"must be at most {LONG_MAX}")
        start, end = self.start_at_ms, self.end_at_ms
        if start is not None and end is not None and end < start:
            raise ValidationError(FIELD_PREFIX + "end_at_ms", "is before start_at_ms")
        if self.max_runs is not None and self.max_runs < 1:
            raise ValidationError(FIELD_PREFIX + "max_runs", "must be at least 1")
        if self.max_runs is not None and self.max_runs > INT_MAX:
            raise ValidationError(FIELD_PREFIX + "max_runs", f"must be at most {INT_MAX}")

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> CronSpec:
        """Build from a decoded CronSchedule record; absent fields take the Avro defaults."""
        known = {k: record[k] for k in _AVRO_FIELDS if k in record}
        if "expression" not in known:
            raise ValidationError(FIELD_PREFIX + "expression", "is required")
        return cls(**known)

    def to_avro(self) -> dict[str, Any]:
        """The CronSchedule record, enums as their symbols."""
        record = {name: getattr(self, name) for name in _AVRO_FIELDS}
        return {k: str(v) if isinstance(v, StrEnum) else v for k, v in record.items()}


_ENUM_FIELDS: dict[str, type[StrEnum]] = {
    "skipped_hour": SkippedHourPolicy,
    "repeated_hour": RepeatedHourPolicy,
    "misfire": MisfirePolicy,
    "overlap": OverlapPolicy,
}
_AVRO_FIELDS = (
    "expression",
    "timezone",
    "start_at_ms",
    "end_at_ms",
    "max_runs",
    "skipped_hour",
    "repeated_hour",
    "misfire",
    "catchup_window_ms",
    "overlap",
    "jitter_ms",
)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_expression(expression: object) -> None:
    field = FIELD_PREFIX + "expression"
    if not isinstance(expression, str) or not expression.strip():
        raise ValidationError(field, "must be a non-empty string")
    if not expression.strip().startswith("@") and len(expression.split()) != 5:
        raise ValidationError(field, "must have five fields: minute hour day month weekday")
    if not croniter.is_valid(expression):
        raise ValidationError(field, f"is not a valid cron expression: {expression!r}")
    try:
        croniter(expression, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError:
        raise ValidationError(field, f"never matches a date: {expression!r}") from None


def _check_timezone(timezone: object) -> None:
    field = FIELD_PREFIX + "timezone"
    if not isinstance(timezone, str) or not timezone:
        raise ValidationError(field, "must be an IANA time zone name")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(field, f"unknown time zone: {timezone!r}") from None


def jitter_offset_ms(job_id: str, due_ms: int, jitter_ms: int) -> int:
    """A stable offset in [0, jitter_ms) for one occurrence of one job (0 when jitter_ms is 0).

    blake2b of the job id and the nominal instant, not ``hash()``: a replay in another process
    (PYTHONHASHSEED differs) must fire at the same moment.
    """
    if jitter_ms < 0:
        raise ValueError("jitter_ms must be >= 0")
    if jitter_ms <= 1:
        return 0
    digest = hashlib.blake2b(
        f"{job_id}\x00{due_ms}".encode(), digest_size=8, person=_JITTER_PERSON
    ).digest()
    return int.from_bytes(digest, "big") % jitter_ms


@dataclass(frozen=True)
class Occurrence:
    """One run of a schedule."""

    nominal_ms: int
    """The instant the expression and DST policies give."""
    due_ms: int
    """nominal_ms plus jitter: when the timer fires, and the instant execution ids name."""


def next_due_ms(spec: CronSpec, after_ms: int, *, job_id: str, runs_so_far: int = 0) -> int | None:
    """The first fire instant strictly after ``after_ms``; None once the schedule has ended.

    ``after_ms`` is on the fire (jittered) timeline: pass the fire instant last returned, or
    the submission instant for a new schedule. Ended means max_runs reached
    (``runs_so_far >= max_runs``) or no occurrence left before end_at_ms.
    """
    if spec.max_runs is not None and runs_so_far >= spec.max_runs:
        return None
    first = next(iter_occurrences(spec, after_ms, job_id=job_id), None)
    return None if first is None else first.due_ms


def iter_occurrences(spec: CronSpec, after_ms: int, *, job_id: str) -> Iterator[Occurrence]:
    """Occurrences with ``due_ms > after_ms`` in increasing order, within start/end.

    max_runs is not applied here (the iterator cannot know how many ran); callers stop.
    """
    tz = ZoneInfo(spec.timezone)
    # A nominal at or before after_ms - jitter_ms fires at or before after_ms.
    lower = after_ms - spec.jitter_ms
    if spec.start_at_ms is not None:
        lower = max(lower, spec.start_at_ms - 1)
    nominals = _nominal_instants(spec, tz, lower)
    nominal = next(nominals, None)
    while nominal is not None:
        if spec.end_at_ms is not None and nominal > spec.end_at_ms:
            return
        following = next(nominals, None)
        window = spec.jitter_ms
        if following is not None:
            window = min(window, following - nominal)
        if spec.end_at_ms is not None:
            window = min(window, spec.end_at_ms - nominal + 1)
        fire = nominal + jitter_offset_ms(job_id, nominal, window)
        if fire > after_ms:
            yield Occurrence(nominal, fire)
        nominal = following


def _nominal_instants(spec: CronSpec, tz: ZoneInfo, after_ms: int) -> Iterator[int]:
    """Strictly increasing nominal instants > after_ms, DST policies applied.

    Wall times map to instants monotonically except second occurrences (fold=1, BOTH), which
    all fall in the repeated hour after the first occurrences of earlier wall times; they wait
    in ``pending`` until a later first occurrence passes them.
    """
    try:
        # The earliest wall time that can map after after_ms: its wall time under the smallest
        # offset nearby (one transition per day at most, as in every tz database zone).
        offset = min(_offset_ms(tz, after_ms + d) for d in (-_DAY_MS, 0, _DAY_MS))
        start_wall = _NAIVE_EPOCH + timedelta(milliseconds=after_ms + offset - 60_000)
    except (OverflowError, ValueError):
        return
    walls = croniter(spec.expression, start_wall)
    pending: deque[int] = deque()
    last = after_ms
    while True:
        try:
            wall = walls.get_next(datetime)
        except (CroniterBadDateError, OverflowError, ValueError):
            break
        instants = _instants_of_wall(spec, tz, wall)
        if not instants:
            continue
        while pending and pending[0] < instants[0]:
            second = pending.popleft()
            if second > last:
                last = second
                yield second
        if instants[0] > last:
            last = instants[0]
            yield instants[0]
        pending.extend(instants[1:])
    for second in pending:
        if second > last:
            last = second
            yield second


def _instants_of_wall(spec: CronSpec, tz: ZoneInfo, wall: datetime) -> tuple[int, ...]:
    """The instants a naive local wall time stands for, per the DST policies."""
    first = ms_of(wall.replace(tzinfo=tz, fold=0))
    second = ms_of(wall.replace(tzinfo=tz, fold=1))
    if first == second:
        return (first,)
    if instant_of(first, tz).replace(tzinfo=None) == wall:
        # Repeated: fold=0 is the earlier instant (the offset in force before the change).
        return (first, second) if spec.repeated_hour == RepeatedHourPolicy.BOTH else (first,)
    if spec.skipped_hour == SkippedHourPolicy.SKIP:
        return ()
    # Nonexistent: fold=1 read it with the later offset (an instant before the jump), fold=0
    # with the earlier one (an instant after it); the jump lies in between.
    return (_transition_ms(tz, second, first),)


def _transition_ms(tz: ZoneInfo, before_ms: int, after_ms: int) -> int:
    """The first instant in (before_ms, after_ms] whose offset is after_ms's offset."""
    target = _offset_ms(tz, after_ms)
    low, high = before_ms, after_ms
    while high - low > 1:
        mid = (low + high) // 2
        if _offset_ms(tz, mid) == target:
            high = mid
        else:
            low = mid
    return high


def _offset_ms(tz: ZoneInfo, ms: int) -> int:
    offset = instant_of(ms, tz).utcoffset()
    assert offset is not None  # a ZoneInfo always has an offset for an aware datetime
    return offset // ONE_MS
