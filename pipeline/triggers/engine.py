"""What a source record makes the trigger processor write: pure decisions, no Kafka.

For each trigger of the record's topic: a record that does not read in the trigger's
format, that its filter cannot evaluate, or whose job breaks a submission rule goes to
jobs.triggers.dlq with the reason; one its filter passes over is skipped; a match is one
JobSubmitted on jobs.intake, its id derived from (trigger, topic, partition, offset).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from jobstream._pipeline.errors import DeserializationError, ValidationError
from jobstream._pipeline.kafka.headers import header_pairs
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.triggers.decode import AvroReader, Decoded, SourceRecord, decode
from jobstream._pipeline.triggers.ids import trigger_idempotency_key
from jobstream._pipeline.triggers.model import Trigger

log = logging.getLogger(__name__)

ERROR_HEADER = "jobstream.error"
TRIGGER_HEADER = "jobstream.trigger"
SOURCE_HEADER = "jobstream.source"
"""The dead letter's headers: why, which trigger (``owner/name``), and where the record
lies (``topic/partition/offset``); the record's own headers follow."""


class _NoStore:
    """The store batch of a processor with none: nothing to roll back."""

    def rollback(self) -> None:
        pass


@dataclass
class Tally:
    """What one transaction's records did, per trigger label: counted once it commits.

    It is the processor's per-partition state in the runtime's eyes (a new one per
    transaction, dropped with an abort), so it answers as a state view over no store.
    """

    changed: ClassVar[bool] = False
    tx: ClassVar[_NoStore] = _NoStore()
    matched: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)


class TriggerEngine:
    def __init__(self, topics: Topics, avro: AvroReader) -> None:
        self.topics = topics
        self.avro = avro

    def process(self, triggers: Sequence[Trigger], record: SourceRecord, now_ms: int,
                tally: Tally) -> list[Output]:  # fmt: skip
        outputs: list[Output] = []
        decoded: dict[str, Decoded | DeserializationError] = {}
        for trigger in triggers:
            label = trigger.label
            try:
                read = decoded.get(trigger.format)
                if read is None:
                    try:
                        read = decode(record, trigger.format, self.avro)
                    except DeserializationError as exc:
                        read = exc
                    decoded[trigger.format] = read
                if isinstance(read, DeserializationError):
                    raise read
                output = self.job(trigger, read, now_ms)
            except (DeserializationError, ValidationError) as exc:
                tally.refused[label] += 1
                outputs.append(self.dead_letter(trigger, record, str(exc)))
                continue
            if output is None:
                tally.skipped[label] += 1
            else:
                tally.matched[label] += 1
                outputs.append(output)
        return outputs

    def job(self, trigger: Trigger, record: Decoded, now_ms: int) -> Output | None:
        """The intake record of the job ``record`` starts; None when the filter passes it
        over."""
        if trigger.compiled is not None and not trigger.compiled.matches(
                record.key, record.headers, record.value):
            return None
        key = trigger_idempotency_key(trigger.name, record.topic, record.partition, record.offset)
        request = trigger.job.request(trigger.owner, trigger.job.params_of(record), trigger.name,
                                      record.where, key)  # fmt: skip
        event = request.to_event(now_ms)
        return Output(self.topics.intake, partition_key(event.data.job_id, None), event)

    def dead_letter(self, trigger: Trigger, record: SourceRecord, reason: str) -> Output:
        where = f"{record.topic()}/{record.partition()}/{record.offset()}"
        log.warning("trigger record dead-lettered", extra={
            "trigger": trigger.label, "source": where, "reason": reason})  # fmt: skip
        headers = [(ERROR_HEADER, reason.encode()), (TRIGGER_HEADER, trigger.label.encode()),
                   (SOURCE_HEADER, where.encode())]  # fmt: skip
        headers += header_pairs(record)
        return Output(self.topics.triggers_dlq, record.key(), record.value() or b"",
                      headers=headers)


def sources(triggers: Iterable[Trigger]) -> list[str]:
    return sorted({trigger.source for trigger in triggers})
