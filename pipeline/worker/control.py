"""A worker's reader of jobs.control: the cancels of jobs that have fired.

Every worker reads the whole topic, without a consumer group (a cancel is for whichever
worker holds the execution, and none can tell which that is), and commits nothing. At
start it begins ``lookback_ms`` back (offsets_for_times; by default the topic's whole
retention) and reads to the end before the first run starts, so a cancel written while
the worker was down still meets the record it cancels when that record is fetched. Then
the worker loop polls it without waiting, on the thread that owns every Kafka client.

jobs.control is written in the timers' transactions: read_committed, a cancel is seen
once the command that caused it has committed. Its fetches wait up to
:data:`FETCH_WAIT_MS` for a record: the broker answers as soon as one arrives, so the wait
costs no latency, and an idle worker fetches twice a second rather than a hundred times.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_END, KafkaError, KafkaException, Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError, DeserializationError
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.scan import partitions_of, scan_consumer
from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import CONTROL_RETENTION_MS, Topics

log = logging.getLogger(__name__)

FETCH_WAIT_MS = 500
METADATA_TIMEOUT_S = 10.0
CATCH_UP_TIMEOUT_S = 10.0
"""Longest the start waits to read jobs.control to its end; past it, the worker starts
anyway and the rest arrives through the polls."""
POLL_BATCH = 100

Deserialize = Callable[[bytes | None], Event]


class ControlReader:
    def __init__(self, settings: Settings, deserialize: Deserialize, *,
                 lookback_ms: int = CONTROL_RETENTION_MS) -> None:  # fmt: skip
        self.settings = settings
        self.topics = Topics(settings)
        self.topic = self.topics.control
        self._deserialize = deserialize
        self.lookback_ms = lookback_ms
        self._consumer = scan_consumer(settings, **{"fetch.wait.max.ms": FETCH_WAIT_MS})
        self.read = 0
        """CancelRequested records read since the start."""

    def start(self, now_ms: int) -> list[CancelRequest]:
        """Assign every partition from ``lookback_ms`` before ``now_ms`` and read to the end:
        the cancels found. The topic is created when missing (a stack set up before it
        existed)."""
        try:
            partitions = partitions_of(self._consumer, self.topic)
        except ConfigurationError:
            ensure_topics(self.settings.kafka_config, [self.topics.control_spec()],
                          replication_factor=self.settings.replication_factor,
                          min_insync_replicas=self.settings.min_insync_replicas)  # fmt: skip
            partitions = partitions_of(self._consumer, self.topic)
        since = [TopicPartition(self.topic, p, max(0, now_ms - self.lookback_ms))
                 for p in partitions]  # fmt: skip
        found = self._offsets_for_times(since)
        # -1: no record at or after the instant, so the reading starts at the end.
        self._consumer.assign([TopicPartition(self.topic, tp.partition,
                                              tp.offset if tp.offset >= 0 else OFFSET_END)
                               for tp in found])  # fmt: skip
        return self._catch_up(set(partitions))

    def _offsets_for_times(self, since: list[TopicPartition]) -> list[TopicPartition]:
        """The offsets at the instants ``since``, asked again while the broker answers with
        an error (a leader not yet elected on a new topic, a leader moving: librdkafka does
        not mark those retriable here), for at most METADATA_TIMEOUT_S in all; then the
        last error is raised."""
        deadline = time.monotonic() + METADATA_TIMEOUT_S
        while True:
            try:
                return list(self._consumer.offsets_for_times(since, timeout=METADATA_TIMEOUT_S))
            except KafkaException as exc:
                if time.monotonic() >= deadline:
                    raise
                log.info("jobs.control offsets not found yet, asking again: %s", exc)
                time.sleep(0.2)

    def _catch_up(self, pending: set[int]) -> list[CancelRequest]:
        requests: list[CancelRequest] = []
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while pending and (left := deadline - time.monotonic()) > 0:
            for message in self._consumer.consume(POLL_BATCH, timeout=min(left, 0.5)):
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition() or 0)
                    continue
                request = self._request(message)
                if request is not None:
                    requests.append(request)
        if pending:
            log.warning("jobs.control not read to its end within %.0f s: going on, the rest "
                        "comes as the worker runs", CATCH_UP_TIMEOUT_S)  # fmt: skip
        log.info("cancels read from jobs.control", extra={"cancels": len(requests)})
        return requests

    def poll(self) -> list[CancelRequest]:
        """The cancels that arrived since the last poll; never waits."""
        requests = []
        for message in self._consumer.consume(POLL_BATCH, timeout=0):
            request = self._request(message)
            if request is not None:
                requests.append(request)
        return requests

    def _request(self, message: Message) -> CancelRequest | None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                log.warning("jobs.control: %s", error.str())
            return None
        try:
            event = self._deserialize(message.value())
        except DeserializationError as exc:
            log.warning("jobs.control record skipped: %s", exc, extra={"offset": message.offset()})
            return None
        if event.name != "CancelRequested":
            log.warning("jobs.control record skipped: %s does not belong there", event.name)
            return None
        self.read += 1
        return CancelRequest.from_record(event.data)

    def close(self) -> None:
        self._consumer.close()
