"""The wall clock every component reads, and the one conversion between its epoch
milliseconds (what the events carry) and a datetime (what a person and pydantic read).

The clock is the cluster's: this host's clock plus the correction its clock watch
measured against the brokers' (pipeline/kafka/clock_watch.py; 0 until measured, or when
``JOBSTREAM_CLOCK_CORRECTION`` is off). So the timers fire, the status processor expires
leases and a worker starts a run on one clock, whatever each host's clock says."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, tzinfo

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MS = timedelta(milliseconds=1)


_correction_ms = 0
"""What this process adds to its host's clock to read the cluster's."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000 + _correction_ms


def host_now_ms() -> int:
    """This host's own clock, uncorrected: what a clock watch measures."""
    return time.time_ns() // 1_000_000


def correct_by(correction_ms: int) -> None:
    """From now on, read the cluster's clock as this host's plus ``correction_ms``."""
    global _correction_ms
    _correction_ms = correction_ms


def correction_ms() -> int:
    return _correction_ms


def seconds_until(at_ms: int) -> float:
    """How long until the instant ``at_ms`` on this clock; 0 once it has come."""
    return max(0.0, (at_ms - now_ms()) / 1000)


def ms_of(moment: datetime) -> int:
    """Epoch ms of an aware datetime, to the millisecond below (no float on the way)."""
    return (moment - EPOCH) // ONE_MS


def instant_of(ms: int, tz: tzinfo = UTC) -> datetime:
    """The aware datetime of epoch ms ``ms``, in ``tz``."""
    moment = EPOCH + ms * ONE_MS
    return moment if tz is UTC else moment.astimezone(tz)


def iso_ms(ms: int) -> str:
    """``2026-03-01T05:00:00Z`` (``...05:00:00.250Z`` when the milliseconds are not 0)."""
    text = instant_of(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")
