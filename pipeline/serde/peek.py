"""A JobLifecycle's kind, read off its first body byte, without decoding the rest.

Consumers of jobs.events that act on a few kinds only (the retry router: failures) can
pass over the others with a dictionary lookup instead of a full Avro decode. In the
single-object encoding a record is ``C3 01``, the writer schema's 8-byte fingerprint,
then its fields in order; JobLifecycle's first field is the enum ``kind``, whose index
is a zig-zag varint, one byte while it is below 64. The symbols are those of the writer
schema the fingerprint names, so released versions read right too.

Anything else (the Confluent framing, other events, unknown fingerprints, a malformed
byte) gives None, and the caller decodes the record as it would have anyway.
"""

from __future__ import annotations

from jobstream._pipeline.serde.avro import SINGLE_OBJECT_HEADER_SIZE, SINGLE_OBJECT_MAGIC
from jobstream._pipeline.serde.schemas import EventSchemas, event_schemas


def _kind_symbols(schemas: EventSchemas) -> dict[bytes, tuple[str, ...]]:
    table = {}
    for writer in schemas.writer_schemas():
        first = writer.parsed["fields"][0] if writer.name == "JobLifecycle" else {}
        kind_type = first.get("type")
        if first.get("name") == "kind" and isinstance(kind_type, dict):
            table[writer.fingerprint] = tuple(kind_type["symbols"])
    return table


_KINDS = _kind_symbols(event_schemas())
LIFECYCLE_KINDS = _KINDS[event_schemas().current("JobLifecycle").fingerprint]
"""Every kind of the current JobLifecycle schema: the values of
:class:`jobstream._pipeline.model.lifecycle.LifecycleKind`, as the symbols :func:`lifecycle_kind`
returns, so
that a set of them finds a peeked kind by identity."""


def lifecycle_kind(value: bytes | None) -> str | None:
    """The ``kind`` of a single-object JobLifecycle; None when it cannot be read cheaply."""
    if not value or len(value) <= SINGLE_OBJECT_HEADER_SIZE or value[:2] != SINGLE_OBJECT_MAGIC:
        return None
    symbols = _KINDS.get(value[2:SINGLE_OBJECT_HEADER_SIZE])
    byte = value[SINGLE_OBJECT_HEADER_SIZE]
    if symbols is None or byte & 0x81:  # a negative index, or more than one byte
        return None
    index = byte >> 1
    return symbols[index] if index < len(symbols) else None
