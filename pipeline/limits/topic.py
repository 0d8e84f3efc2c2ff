"""The limits on jobs.limits: set, clear and list them, and follow them from a timer process.

jobs.limits is compacted, one partition, keyed by :attr:`LimitKey.id`: its latest record
per key is the limit in force, a tombstone clears it. Every timer process reads it whole
on a thread of its own while it joins its group, and fires nothing before it has (the
board's ``ready``), then follows it: a change applies within a poll (0.5 s) in every
process.
"""

from __future__ import annotations

import logging
import threading

from confluent_kafka import KafkaError, KafkaException, Message

from pipeline.config import Settings
from pipeline.errors import ConfigurationError, JobstreamError, ValidationError
from pipeline.kafka import clients
from pipeline.kafka.scan import TopicScan
from pipeline.limits.model import Limit, LimitKey
from pipeline.limits.throttle import LimitBoard
from pipeline.topics import Topics

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 30.0
POLL_S = 0.5
RETRY_S = 5.0
"""The wait before reading jobs.limits again when it is missing or could not be read."""
FOLLOW_FETCH = {"fetch.wait.max.ms": int(POLL_S * 1000)}
"""The follower's fetches wait up to a poll for a change: two a second on a topic that
changes a few times a day, not a hundred (the consumers' 10 ms wait)."""


def set_limit(settings: Settings, limit: Limit) -> None:
    _write(settings, limit.key, limit.encode())


def clear_limit(settings: Settings, key: LimitKey) -> None:
    _write(settings, key, None)


def read_limits(settings: Settings) -> list[Limit]:
    """The limits in force: jobs.limits read to its end."""
    board = LimitBoard()
    with TopicScan(settings, Topics(settings).limits) as scan:
        for batch in scan:
            for message in batch:
                apply(board, message)
    return sorted(board.limits.values(), key=lambda limit: str(limit.key))


def apply(board: LimitBoard, message: Message) -> None:
    """One jobs.limits record onto ``board``; a record that is not a limit is logged and
    skipped (the rest still apply)."""
    try:
        key = LimitKey.from_id((message.key() or b"").decode())
        value = message.value()
        if value is None:
            board.clear(key)
        else:
            board.set(Limit.decode(value))
    except (ValidationError, UnicodeDecodeError) as exc:
        log.warning("jobs.limits record skipped: %s", exc, extra={"offset": message.offset()})


def _write(settings: Settings, key: LimitKey, value: bytes | None) -> None:
    producer = clients.producer(settings)
    producer.produce(Topics(settings).limits, value, key.id.encode())
    if producer.flush(FLUSH_TIMEOUT_S) > 0:
        raise ConfigurationError(f"jobs.limits: not written within {FLUSH_TIMEOUT_S:g} s")


class LimitsFollower:
    """Keeps a :class:`LimitBoard` equal to jobs.limits, on a daemon thread."""

    def __init__(self, settings: Settings, board: LimitBoard) -> None:
        self.settings = settings
        self.board = board
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Read jobs.limits to its end, then follow it, on a thread; the board is ready once
        the first reading is done. A missing topic (``jobstream topics create`` makes it)
        counts as no limits while it is missing."""
        self.board.ready.clear()
        self._thread = threading.Thread(target=self._follow, name="limits", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _try_load(self) -> TopicScan | None:
        """:meth:`_load`, or None after logging why it failed (the board stays not ready
        unless the topic is missing: the timers wait rather than fire unlimited)."""
        try:
            return self._load()
        except (JobstreamError, KafkaException) as exc:
            log.warning("jobs.limits not read: %s; trying again in %.0f s", exc, RETRY_S)
            return None

    def _load(self) -> TopicScan | None:
        try:
            scan = TopicScan(self.settings, Topics(self.settings).limits, tuning=FOLLOW_FETCH)
        except ConfigurationError as exc:
            log.warning("no rate limits apply: %s", exc)
            self.board.ready.set()
            return None
        for batch in scan:
            for message in batch:
                apply(self.board, message)
        log.info("rate limits loaded", extra={"limits": [str(k) for k in self.board.limits]})
        self.board.ready.set()
        return scan

    def _follow(self) -> None:
        scan = self._try_load()
        while scan is None and not self._stop.wait(RETRY_S):
            scan = self._try_load()
        if scan is None:
            return
        try:
            while not self._stop.is_set():
                for message in scan.consumer.consume(100, timeout=POLL_S):
                    error = message.error()
                    if error is None:
                        apply(self.board, message)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        log.warning("jobs.limits: %s", error.str())
        finally:
            scan.close()
