"""Read the dead-letter topics: every DeadLettered from the beginning to the end offsets.

The end of each partition is taken once, before reading, so a read is a snapshot: a job
that is redriven and dead-lettered again while a redrive runs is not met a second time.
Under read_committed a partition also ends at its last stable offset (librdkafka reports
end-of-partition there), so a transaction left open by a router never stalls a read.

Reading assigns partitions directly (no group, nothing committed): listing the DLQ
changes nothing, and any number of operators can read it at once.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TypedDict

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import DeserializationError, JobstreamError
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.model.records import DeadLettered, ErrorInfo
from jobstream._pipeline.model.retry import error_type_matches
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DlqRecord:
    """One DeadLettered record and where it lies (its identity: topic, partition, offset)."""

    topic: str
    partition: int
    offset: int
    data: DeadLettered

    @property
    def coordinates(self) -> tuple[str, int, int]:
        return self.topic, self.partition, self.offset

    @property
    def job_id(self) -> str:
        return self.data.job_id

    @property
    def job_type(self) -> str:
        return self.data.spec.job_type

    @property
    def owner(self) -> str:
        return self.data.spec.owner

    @property
    def dead_lettered_at_ms(self) -> int:
        return self.data.dead_lettered_at_ms

    @property
    def errors(self) -> list[ErrorInfo]:
        """Every attempt's error, oldest first."""
        return self.data.errors

    @property
    def last_error(self) -> ErrorInfo | None:
        errors = self.data.errors
        return errors[-1] if errors else None


@dataclass(frozen=True, kw_only=True)
class DlqFilter:
    """Which dead letters to select; every field left None selects all."""

    job_type: str | None = None
    """Read only this type's topic, ``jobs.dlq.<type>``."""
    error_type: str | None = None
    """The error that dead-lettered the job (its *last* error), since that is what an
    operator fixes before a redrive; with ``any_attempt`` any attempt's error matches."""
    any_attempt: bool = False
    owner: str | None = None
    reason: str | None = None
    """``exhausted`` or ``non_retryable``."""
    since_ms: int | None = None
    """Dead-lettered at or after this instant (epoch ms)."""
    until_ms: int | None = None
    """Dead-lettered before this instant (epoch ms)."""
    job_id: str | None = None

    def matches(self, record: DlqRecord) -> bool:
        at = record.dead_lettered_at_ms
        checks = (
            self.job_type is None or record.job_type == self.job_type,
            self.owner is None or record.owner == self.owner,
            self.reason is None or record.data.reason == self.reason,
            self.job_id is None or record.job_id == self.job_id,
            self.since_ms is None or at >= self.since_ms,
            self.until_ms is None or at < self.until_ms,
        )
        return all(checks) and self._error_matches(record)

    def _error_matches(self, record: DlqRecord) -> bool:
        if self.error_type is None:
            return True
        errors = record.errors if self.any_attempt else record.errors[-1:]
        return any(error_type_matches(e.error_type, self.error_type) for e in errors)


class DlqReader:
    """Reads DeadLettered records from one or every ``jobs.dlq.<type>`` topic."""

    def __init__(self, settings: Settings, *, timeout_s: float = 30.0) -> None:
        self.topics = Topics(settings)
        self.timeout_s = timeout_s
        _, self.deserialize = make_serde(settings.schema_registry_url)
        self.consumer: Consumer = clients.consumer(
            settings, f"{settings.topic_prefix}jobstream.dlq.reader",
            **{"enable.partition.eof": True},
        )  # fmt: skip
        self.undecodable = 0
        """Records on a dead-letter topic that no schema reads; skipped and counted."""

    def __enter__(self) -> DlqReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        self.consumer.close()

    def dead_letter_topics(self, job_type: str | None = None) -> list[str]:
        """The type's dead-letter topic, or every one in the cluster under our prefix."""
        present = self.consumer.list_topics(timeout=self.timeout_s).topics
        if job_type is not None:
            name = self.topics.dead_letter(job_type)
            return [name] if name in present else []
        prefix = self.topics.dead_letter("")
        return sorted(name for name in present if name.startswith(prefix))

    def read(self, selection: DlqFilter | None = None) -> Iterator[DlqRecord]:
        """Every record that ``selection`` selects, partition by partition in offset order.

        Raises JobstreamError when ``timeout_s`` passes without a record while some
        partition is not read to its end (a broker that went away, say).
        """
        selection = selection or DlqFilter()
        ends = self._assign(self.dead_letter_topics(selection.job_type))
        deadline = time.monotonic() + self.timeout_s
        try:
            while ends:
                messages = self.consumer.consume(500, timeout=0.2)
                if messages:
                    deadline = time.monotonic() + self.timeout_s
                elif time.monotonic() > deadline:
                    raise JobstreamError(
                        f"dead-letter topics stalled for {self.timeout_s}s before their end: "
                        + ", ".join(f"{t}/{p}" for t, p in sorted(ends))
                    )
                for message in messages:
                    record = self._take(message, ends)
                    if record is not None and selection.matches(record):
                        yield record
        finally:
            # A caller that stops early may close the reader before the generator ends.
            with contextlib.suppress(RuntimeError):
                self.consumer.unassign()

    def _assign(self, names: list[str]) -> dict[tuple[str, int], int]:
        """Assign every non-empty partition from its start; return the end of each."""
        metadata = self.consumer.list_topics(timeout=self.timeout_s).topics
        ends: dict[tuple[str, int], int] = {}
        assignment = []
        for name in names:
            for p in metadata[name].partitions:
                low, high = watermarks(self.consumer, TopicPartition(name, p), self.timeout_s)
                if high > low:
                    ends[(name, p)] = high
                    assignment.append(TopicPartition(name, p, low))
        self.consumer.assign(assignment)
        return ends

    def _take(self, message: Message, ends: dict[tuple[str, int], int]) -> DlqRecord | None:
        """The record in ``message``, if any; drops a partition from ``ends`` at its end."""
        where = (str(message.topic()), int(message.partition() or 0))
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                ends.pop(where, None)
            else:
                log.warning("dead-letter read error on %s/%s: %s", *where, error)
            return None
        offset = int(message.offset() or 0)
        end = ends.get(where)
        if end is None or offset >= end:
            ends.pop(where, None)
            return None
        if offset + 1 >= end:
            ends.pop(where)
        try:
            event = self.deserialize(message.value())
        except DeserializationError:
            self.undecodable += 1
            return None
        if event.name != "DeadLettered":
            self.undecodable += 1
            return None
        return DlqRecord(where[0], where[1], offset, event.data)


class DlqSummary(TypedDict):
    """A dead letter as a listing shows it: the job, why, and its last error."""

    job_id: str
    job_type: str
    owner: str
    reason: str
    attempts: int
    dead_lettered_at_ms: int
    error_type: str | None
    message: str | None


class DlqLine(DlqSummary):
    """A line of ``jobstream dlq list --json``: the summary and where the record lies."""

    topic: str
    partition: int
    offset: int


def summary(record: DlqRecord) -> DlqSummary:
    """The fields a listing shows, small enough to keep for thousands of records."""
    last = record.last_error
    return {
        "job_id": record.job_id,
        "job_type": record.job_type,
        "owner": record.owner,
        "reason": record.data.reason,
        "attempts": record.data.attempts,
        "dead_lettered_at_ms": record.dead_lettered_at_ms,
        "error_type": None if last is None else last.error_type,
        "message": None if last is None else last.message,
    }


def line(record: DlqRecord) -> DlqLine:
    """The summary of ``record`` and its topic, partition and offset."""
    return DlqLine(**summary(record), topic=record.topic, partition=record.partition,
                   offset=record.offset)  # fmt: skip
