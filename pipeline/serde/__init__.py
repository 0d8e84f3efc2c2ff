"""Serde: Avro for events on topics, JSON for the jobs.status view.

Serialization happens at the edge (producer, consumer, state store's outer layer);
everything inside works on :class:`Event` and :class:`JobStatus` values.
"""

from jobstream._pipeline.model.lifecycle import JobState
from jobstream._pipeline.serde.avro import AvroDeserializer, AvroSerializer, Event, make_serde
from jobstream._pipeline.serde.schemas import EVENT_NAMES, EventSchemas, WriterSchema, event_schemas
from jobstream._pipeline.serde.status_json import (
    Cancellation,
    JobStatus,
    LastError,
    Progress,
    decode_status,
    encode_status,
)

__all__ = [
    "EVENT_NAMES",
    "AvroDeserializer",
    "AvroSerializer",
    "Cancellation",
    "Event",
    "EventSchemas",
    "JobState",
    "JobStatus",
    "LastError",
    "Progress",
    "WriterSchema",
    "decode_status",
    "encode_status",
    "event_schemas",
    "make_serde",
]
