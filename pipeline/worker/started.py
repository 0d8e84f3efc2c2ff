"""STARTED records built around the bytes of the execution as it was received.

STARTED carries the ExecutionRequested it starts, and encoding that nested record again
is most of what encoding a STARTED costs (fastavro validates a record against each
branch of a union before writing it). The worker has the record's bytes already, so when
they are Avro single-object encoded with the current ExecutionRequested schema, it
encodes the STARTED without its execution and appends them instead:

- ``execution`` is the last field of JobLifecycle, a union ``["null", ExecutionRequested]``,
  so a record whose execution is null ends with the branch index 0 (one byte, ``00``);
- the same record with an execution ends with branch index 1 (``02``) followed by the
  execution's Avro body, which is exactly what the single-object bytes hold after their
  10-byte header.

The result is the same bytes the serializer would write. Both conditions are checked
once, against the schemas: when they do not hold (a schema change moved the field, a
record written by an older schema version or framed for a schema registry), the STARTED
is encoded whole, as before.
"""

from __future__ import annotations

from fastavro.schema import expand_schema, fingerprint, to_parsing_canonical_form

from jobstream._pipeline.model.records import evolve
from jobstream._pipeline.serde import Event, EventSchemas, WriterSchema
from jobstream._pipeline.serde.avro import (
    SINGLE_OBJECT_HEADER_SIZE,
    SINGLE_OBJECT_MAGIC,
    AvroSerializer,
)

_NULL_BRANCH, _RECORD_BRANCH = b"\x00", b"\x02"


class StartedEncoder:
    """Encodes STARTED events, splicing in the received execution bytes when it can."""

    __slots__ = ("_header", "_serialize")

    def __init__(self, serialize: AvroSerializer, schemas: EventSchemas) -> None:
        self._serialize = serialize
        execution = schemas.current("ExecutionRequested")
        spliceable = _execution_is_last_branch(schemas.current("JobLifecycle"),
                                               execution.fingerprint)  # fmt: skip
        self._header = SINGLE_OBJECT_MAGIC + execution.fingerprint if spliceable else None

    @property
    def splices(self) -> bool:
        """Whether the current schemas let STARTED be built around the received bytes."""
        return self._header is not None

    def __call__(self, event: Event, received: bytes | None) -> bytes:
        """``event`` (a STARTED carrying its execution) encoded; ``received`` is the
        execution record as it came off the topic, if at hand."""
        if self._header is None or received is None or not received.startswith(self._header):
            return self._serialize(event)
        head = self._serialize(Event(event.name, evolve(event.data, execution=None)))
        if not head.endswith(_NULL_BRANCH):  # cannot happen while the schema check holds
            return self._serialize(event)
        body = memoryview(received)[SINGLE_OBJECT_HEADER_SIZE:]
        return b"".join((head[:-1], _RECORD_BRANCH, body))


def _execution_is_last_branch(lifecycle: WriterSchema, execution_fingerprint: bytes) -> bool:
    """JobLifecycle ends with ``execution: ["null", <the current ExecutionRequested>]``."""
    # Named types defined earlier in JobLifecycle (ErrorInfo) are only referenced inside
    # its execution branch; expanded, the branch stands alone and has a fingerprint.
    expanded = expand_schema(lifecycle.parsed)
    fields = expanded.get("fields") if isinstance(expanded, dict) else None
    if not fields or fields[-1].get("name") != "execution":
        return False
    branches = fields[-1].get("type")
    if not isinstance(branches, list) or len(branches) != 2 or branches[0] != "null":
        return False
    record = branches[1]
    if not isinstance(record, dict):
        return False
    canonical = to_parsing_canonical_form(record)
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO")) == execution_fingerprint
