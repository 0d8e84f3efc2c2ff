"""How far this host's clock is from the cluster's, from records the brokers stamped.

A probe record is written to a topic whose timestamps the broker sets when it appends the
record (``message.timestamp.type=LogAppendTime``, jobs.clocks), and its delivery report
carries that stamp. The broker stamped it after the probe was sent and before the report
came back, so the cluster's clock read ``stamp`` at some host instant between the two:
the host's offset (cluster minus host) lies in ``[stamp - acked, stamp - sent]``. The
estimate is the middle of that interval, its error half its width plus the stamp's 1 ms.
A probe answered quickly is a tight bound: of the recent probes the estimate is the
tightest one's.

Pure: no Kafka, no clock read here (pipeline/kafka/clock_watch.py sends the probes).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

STAMP_RESOLUTION_MS = 1
"""A broker's stamp is in whole milliseconds."""


@dataclass(frozen=True)
class OffsetSample:
    offset_ms: float
    """The cluster's clock minus this host's."""
    error_ms: float
    """The true offset is within this of ``offset_ms``."""

    @classmethod
    def of(cls, *, sent_ms: float, round_trip_ms: float, stamp_ms: int) -> OffsetSample:
        """The bound one probe gives: sent at ``sent_ms`` (this host's clock), its report
        back ``round_trip_ms`` later (a monotonic clock's), stamped ``stamp_ms`` by the
        broker."""
        if round_trip_ms < 0:
            raise ValueError(f"a probe cannot come back before it is sent ({round_trip_ms} ms)")
        midpoint = sent_ms + round_trip_ms / 2
        return cls(stamp_ms - midpoint, round_trip_ms / 2 + STAMP_RESOLUTION_MS)


class OffsetEstimate:
    """The best of the last ``window`` samples: the one with the smallest error."""

    def __init__(self, window: int = 12) -> None:
        self._samples: deque[OffsetSample] = deque(maxlen=window)

    def add(self, sample: OffsetSample) -> None:
        self._samples.append(sample)

    def best(self) -> OffsetSample | None:
        return min(self._samples, key=lambda s: s.error_ms, default=None)


def needs_correction(current_ms: int, best: OffsetSample) -> bool:
    """Whether a process reading the cluster's clock as its host's plus ``current_ms``
    should move to ``best``: only when ``best`` says the current correction is wrong (off by
    more than its error), so a steady clock is not nudged by every probe's jitter."""
    return abs(best.offset_ms - current_ms) > best.error_ms
