"""Backfill: the occurrences of a recurring schedule in a past range, and when each runs.

A backfill runs, once each, the occurrences a schedule had in ``[from_ms, to_ms)``: those
whose *nominal* instant (the expression and DST policies of
:mod:`jobstream._pipeline.scheduling.cron`,
before jitter) falls in the range. They come from :func:`iter_occurrences`, the code the
timers fire by, so the time zone, ``skipped_hour``, ``repeated_hour``, ``start_at_ms`` and
``end_at_ms`` hold as they do for live fires. ``max_runs`` and the misfire policy do not
apply: a backfill is an explicit request for those occurrences, not runs the schedule
counts or missed.

The range must be in the past (``to_ms <= now_ms``): the future belongs to the schedule.
It holds at most ``MAX_OCCURRENCES`` occurrences, so one request cannot flood the workers
or the intake; a longer backfill is several requests.

Pacing, :func:`paced_run_at_ms`: the ``i``-th occurrence submitted (oldest first) is due
at ``now + i / rate``, so the timers start at most ``rate`` of them a second, with no
process of the caller's kept alive for it.
"""

from __future__ import annotations

import math
from datetime import datetime

from jobstream._pipeline.clock import ms_of
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling.cron import CronSpec, iter_occurrences

MAX_OCCURRENCES = 10_000
"""Most occurrences one backfill runs."""
DEFAULT_RATE = 10.0
"""Occurrences started a second when the caller names no rate."""
MIN_RATE = 0.01
"""The lowest rate: MAX_OCCURRENCES at it are due within 12 days, well inside the range a
one-off job's run time may have."""
MAX_RATE = 1000.0
"""The highest rate a backfill may ask for (the API's default submit rate)."""

def parse_instant_ms(text: str, field: str) -> int:
    """Epoch ms of ISO 8601 ``text`` with a zone (``2026-03-01T00:00Z``); ValidationError
    naming ``field`` otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except (AttributeError, ValueError):
        raise ValidationError(field, f"must be an ISO 8601 instant with a zone, got {text!r}"
                              ) from None  # fmt: skip
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValidationError(field, f"needs a zone (Z or +01:00): {text!r}")
    return ms_of(moment)


def check_rate(rate: object, field: str = "rate") -> float:
    """A rate in occurrences a second: a number in [MIN_RATE, MAX_RATE]."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
        raise ValidationError(field, "must be a number of occurrences a second")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValidationError(field, f"must be from {MIN_RATE:g} to {MAX_RATE:g} a second")
    return float(rate)


def backfill_occurrences(spec: CronSpec, *, job_id: str, from_ms: int, to_ms: int,
                         now_ms: int, limit: int = MAX_OCCURRENCES) -> tuple[int, ...]:  # fmt: skip
    """Nominal instants of ``spec`` in ``[from_ms, to_ms)``, oldest first.

    ValidationError naming ``to`` when the range is empty or reversed, reaches past
    ``now_ms``, or holds more than ``limit`` occurrences.
    """
    if to_ms <= from_ms:
        raise ValidationError("to", "must be after from")
    if to_ms > now_ms:
        raise ValidationError("to", "is in the future: a backfill runs past occurrences only")
    found: list[int] = []
    # A nominal at or after from_ms fires (jitter adds, never subtracts) after from_ms - 1.
    for occurrence in iter_occurrences(spec, from_ms - 1, job_id=job_id):
        if occurrence.nominal_ms >= to_ms:
            break
        if occurrence.nominal_ms < from_ms:
            continue
        if len(found) == limit:
            raise ValidationError("to", f"the range holds more than {limit} occurrences: "
                                        "backfill a shorter one")  # fmt: skip
        found.append(occurrence.nominal_ms)
    return tuple(found)


def paced_run_at_ms(index: int, *, now_ms: int, rate: float) -> int:
    """When the ``index``-th occurrence submitted (0 first) is due, at ``rate`` a second."""
    return now_ms + math.ceil(index * 1000 / rate)
