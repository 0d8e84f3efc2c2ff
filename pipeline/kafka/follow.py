"""A compacted settings topic (jobs.limits, jobs.quotas), written by key and followed.

Such a topic has one partition and is keyed by whom a setting applies to: its latest
record per key is the setting in force, a tombstone clears it. A follower reads it whole
on a thread of its own, sets its ``ready`` event, then applies each new record within a
poll (0.5 s), so a change reaches every process that follows it with no restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, Message

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError, JobstreamError, ValidationError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.denied import denied
from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.kafka.scan import TopicScan

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 30.0
POLL_S = 0.5
RETRY_S = 5.0
"""The wait before reading the topic again when it is missing or could not be read."""
FOLLOW_FETCH = {"fetch.wait.max.ms": int(POLL_S * 1000)}
"""The follower's fetches wait up to a poll for a change: two a second on a topic that
changes a few times a day, not a hundred (the consumers' 10 ms wait)."""


SET_BY_HEADER = "jobstream.set-by"
"""Who made a setting's change (a header: readers of any version ignore it, and a
tombstone carries it too); the record's timestamp says when."""


def write_setting(settings: Settings, topic: str, key: str, value: bytes | None, *,
                  set_by: str | None = None) -> None:  # fmt: skip
    """One record (None: a tombstone) naming who made the change, acknowledged;
    ConfigurationError if it is not, AuthorizationError if this principal may not write
    ``topic``."""
    producer = clients.producer(settings)
    failed: list[KafkaError] = []
    headers: list[tuple[str, str | bytes | None]] | None = (
        [(SET_BY_HEADER, set_by.encode())] if set_by else None)
    producer.produce(topic, value, key.encode(), headers=headers,
                     on_delivery=lambda err, _msg: failed.append(err) if err else None)  # fmt: skip
    if producer.flush(FLUSH_TIMEOUT_S) > 0:
        raise ConfigurationError(f"{topic}: not written within {FLUSH_TIMEOUT_S:g} s")
    if failed:
        raise denied(failed[0], topic=topic, principal=settings.sasl_username) or (
            ConfigurationError(f"{topic}: not written: {failed[0].str()}"))


K = TypeVar("K")
V = TypeVar("V")


def apply_setting(message: Message, *, key: Callable[[str], K], decode: Callable[[bytes], V],
                  set_to: Callable[[K, V], None], clear: Callable[[K], None]) -> None:  # fmt: skip
    """One record of a settings topic: the setting of its ``key`` set to its decoded value,
    or cleared by a tombstone. A record that is not a setting is logged and skipped: the
    rest of the topic still applies."""
    try:
        name = key((message.key() or b"").decode())
        value = message.value()
        if value is None:
            clear(name)
        else:
            set_to(name, decode(value))
    except (ValidationError, UnicodeDecodeError, TypeError) as exc:
        log.warning("%s record skipped: %s", message.topic(), exc,
                    extra={"offset": message.offset()})  # fmt: skip


def read_settings_topic(settings: Settings, topic: str, apply: Callable[[Message], None]) -> None:
    """Every record of ``topic``, to its end, through ``apply``."""
    with TopicScan(settings, topic) as scan:
        for batch in scan:
            for message in batch:
                apply(message)


def track_setters(setters: dict[str, str | None],
                  apply: Callable[[Message], None]) -> Callable[[Message], None]:  # fmt: skip
    """``apply``, which also keeps who set each key's setting last in ``setters``."""
    def both(message: Message) -> None:
        apply(message)
        key = (message.key() or b"").decode(errors="replace")
        if message.value() is None:
            setters.pop(key, None)
        else:
            setters[key] = header(message.headers(), SET_BY_HEADER)

    return both


class TopicFollower:
    """Applies every record of a settings topic, on a daemon thread.

    ``ready`` is set once the first reading is done, or at once while the topic is
    missing (``jobstream topics create`` makes it): a missing topic holds no settings, and
    it is looked for again every ``RETRY_S``. A topic that fails to be read leaves
    ``ready`` unset: a process that waits on it waits rather than run without them.
    """

    def __init__(self, settings: Settings, topic: str, apply: Callable[[Message], None],
                 ready: threading.Event, *, what: str) -> None:  # fmt: skip
        self.settings = settings
        self.topic = topic
        self.apply = apply
        self.ready = ready
        self.what = what
        """What the topic holds, for the log: "rate limits", "quotas"."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.ready.clear()
        self._thread = threading.Thread(target=self._follow, name=self.what, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _try_load(self) -> TopicScan | None:
        try:
            return self._load()
        except (JobstreamError, KafkaException) as exc:
            log.warning("%s not read: %s; trying again in %.0f s", self.topic, exc, RETRY_S)
            return None

    def _load(self) -> TopicScan | None:
        try:
            scan = TopicScan(self.settings, self.topic, tuning=FOLLOW_FETCH)
        except ConfigurationError as exc:
            log.warning("no %s apply: %s", self.what, exc)
            self.ready.set()
            return None
        for batch in scan:
            for message in batch:
                self.apply(message)
        log.info("%s loaded", self.what, extra={"topic": self.topic})
        self.ready.set()
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
                        self.apply(message)
                    elif error.code() != KafkaError._PARTITION_EOF:
                        log.warning("%s: %s", self.topic, error.str())
        finally:
            scan.close()
