"""Every long-running process measures its host's clock against the cluster's, and reads
the cluster's.

A :class:`ClockWatch` sends a few probe records to jobs.clocks (a topic whose timestamps
the broker sets, ``LogAppendTime``) at start and every ``JOBSTREAM_CLOCK_PROBE_INTERVAL``
after, on a thread of its own, and estimates the host's offset from the stamps
(pipeline/clock_offset.py). It exports the estimate (``jobstream_clock_offset_seconds``,
with its error), logs a warning while the offset is past ``JOBSTREAM_CLOCK_OFFSET_WARN``,
and, unless ``JOBSTREAM_CLOCK_CORRECTION`` is off, sets the process's clock
(pipeline/clock.py) to the cluster's: the timers fire, leases expire and runs start on one
clock, within the estimate's error, however far each host's clock has drifted.

A probe that fails (no broker, no topic) leaves the clock as it was and is retried at the
next interval; a process never waits on its clock watch longer than the first round's
bound.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaError, Message

from jobstream._pipeline import clock, metrics
from jobstream._pipeline.clock_offset import OffsetEstimate, OffsetSample, needs_correction
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)

PROBES_A_ROUND = 3
"""Probes sent one after another each round: the quickest answered bounds the offset."""
PROBE_TIMEOUT_S = 5.0
"""How long a probe's report may take; a round waits at most this long for each."""
WARN_EVERY_S = 60.0
"""A clock past the warning bound is logged at most this often."""


class ClockWatch:
    def __init__(self, settings: Settings, component: str) -> None:
        self.settings, self.component = settings, component
        self.topic = Topics(settings).clocks
        self.estimate = OffsetEstimate()
        self._producer = clients.producer(settings, client_id=f"jobstream-clock-{component}",
                                          **{"linger.ms": 0})  # fmt: skip
        self._key = f"{component}:{os.getpid()}".encode()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clock-watch", daemon=True)
        self._warned_at = -WARN_EVERY_S
        self._refused: str | None = None

    def start(self) -> None:
        """Measure once (waiting at most one probe's timeout for a broker that does not
        answer), then every interval on a thread."""
        self.measure()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(PROBE_TIMEOUT_S * PROBES_A_ROUND)
        self._producer.flush(1)

    def _run(self) -> None:
        while not self._stop.wait(self.settings.clock_probe_interval / 1000):
            self.measure()

    def measure(self) -> OffsetSample | None:
        """One round of probes; the estimate after it (None: no probe answered yet)."""
        for _ in range(PROBES_A_ROUND):
            sample = self._probe()
            if sample is None:
                break  # the next round tries again: a start waits on one failure at most
            self.estimate.add(sample)
        best = self.estimate.best()
        if best is not None:
            self._apply(best)
        return best

    def _probe(self) -> OffsetSample | None:
        answers: list[tuple[float, KafkaError | None, Message]] = []

        def delivered(err: KafkaError | None, message: Message) -> None:
            answers.append((time.monotonic(), err, message))

        sent_ms, sent = clock.host_now_ms(), time.monotonic()
        try:
            self._producer.produce(self.topic, key=self._key, on_delivery=delivered)
        except BufferError:
            return None
        self._producer.flush(PROBE_TIMEOUT_S)
        if not answers:
            self._refuse(f"no answer in {PROBE_TIMEOUT_S:g} s")
            return None
        acked, err, message = answers[0]
        if err is not None:
            self._refuse(err.str())
            return None
        kind, stamp = message.timestamp()
        if kind != TIMESTAMP_LOG_APPEND_TIME:
            self._refuse(f"{self.topic} does not take the broker's time "
                         "(message.timestamp.type=LogAppendTime); `jobstream topics create` "
                         "makes it so")  # fmt: skip
            return None
        self._refused = None
        return OffsetSample.of(sent_ms=sent_ms, round_trip_ms=(acked - sent) * 1000,
                               stamp_ms=stamp)  # fmt: skip

    def _refuse(self, why: str) -> None:
        if why != self._refused:
            log.warning("clock probe failed; the clock is left as it is", extra={
                "topic": self.topic, "reason": why, "correction_ms": clock.correction_ms()})
        self._refused = why

    def _apply(self, best: OffsetSample) -> None:
        metrics.CLOCK_OFFSET.labels(self.component).set(best.offset_ms / 1000)
        metrics.CLOCK_OFFSET_ERROR.labels(self.component).set(best.error_ms / 1000)
        offset = round(best.offset_ms)
        if abs(offset) > self.settings.clock_offset_warn:
            now = time.monotonic()
            if now - self._warned_at >= WARN_EVERY_S:
                self._warned_at = now
                log.warning("this host's clock is off the cluster's", extra={
                    "offset_ms": offset, "error_ms": round(best.error_ms, 1),
                    "corrected": self.settings.clock_correction})  # fmt: skip
        if self.settings.clock_correction and needs_correction(clock.correction_ms(), best):
            log.info("clock corrected", extra={"from_ms": clock.correction_ms(), "to_ms": offset,
                                               "error_ms": round(best.error_ms, 1)})  # fmt: skip
            clock.correct_by(offset)


def watch_clock(settings: Settings, component: str) -> ClockWatch:
    """Start a process's clock watch (a first round of probes, then a thread)."""
    watch = ClockWatch(settings, component)
    watch.start()
    return watch
