"""A source record as a trigger reads it: its key, headers and value, in JSON's shapes.

- ``json``: the value is parsed as JSON;
- ``avro``: Confluent's wire format (magic 0, the schema id, Avro binary), the writer
  schema fetched from the schema registry (``JOBSTREAM_SCHEMA_REGISTRY_URL``) once per id;
  a key in that format is read the same way;
- ``raw``: the value is its UTF-8 text.

A key is its UTF-8 text (null when absent), headers a map of name to UTF-8 text (the
last of a repeated name wins). Avro's other types become JSON's: bytes as base64 text,
decimals, UUIDs, dates and times as text. A record that does not read so raises
DeserializationError with the reason, for the trigger's dead-letter topic; a registry
that does not answer raises :class:`RegistryUnavailableError` (not the record's fault:
it is read again later).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import struct
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from fastavro import parse_schema, schemaless_reader

from jobstream._pipeline.errors import DeserializationError, JobstreamError
from jobstream._pipeline.model.paths import walk
from jobstream._pipeline.serde.registry import registry_client, registry_error

REGISTRY_TIMEOUT_S = 10
CONFLUENT_MAGIC = 0
_HEADER = struct.Struct(">bI")


class RegistryUnavailableError(JobstreamError):
    """The schema registry did not answer: the record is read again later."""


class SourceRecord(Protocol):
    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def headers(self) -> list[tuple[str, bytes | None]] | None: ...
    def timestamp(self) -> tuple[int, int]: ...


@dataclass(frozen=True)
class Decoded:
    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    headers: Mapping[str, str] = field(default_factory=dict)
    timestamp: int | None = None

    @property
    def where(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"

    def at(self, path: Sequence[str]) -> Any:
        """The value at a checked path (pipeline/triggers/template.py); LookupError naming
        the step the record lacks."""
        root, *steps = path
        if root == "headers":
            if steps[0] not in self.headers:
                raise LookupError(f"the record has no header {steps[0]!r}")
            return self.headers[steps[0]]
        try:
            return walk(getattr(self, root), steps)
        except LookupError as exc:
            lacked = ".".join([root, *steps[: exc.args[0] + 1]])
            raise LookupError(f"the record has no {lacked}") from None


class AvroReader:
    """Confluent-framed Avro, each writer schema fetched once from the registry."""

    def __init__(self, registry_url: str | None) -> None:
        self.registry = (registry_client({"url": registry_url, "timeout": REGISTRY_TIMEOUT_S})
                         if registry_url else None)  # fmt: skip
        self._schemas: dict[int, Any] = {}

    def read(self, data: bytes, what: str) -> Any:
        if len(data) < _HEADER.size or data[0] != CONFLUENT_MAGIC:
            raise DeserializationError(f"{what}: not Confluent's Avro wire format (magic byte 0 "
                                       "and a schema id)", raw=data)  # fmt: skip
        _, schema_id = _HEADER.unpack_from(data)
        schema = self._schema(schema_id, data, what)
        try:
            return jsonable(schemaless_reader(io.BytesIO(data[_HEADER.size:]), schema, None))
        except Exception as exc:  # fastavro raises what its reading meets (EOF, struct, ...)
            raise DeserializationError(f"{what}: not Avro of schema id {schema_id}: "
                                       f"{type(exc).__name__}: {exc}"[:500], raw=data) from None

    def _schema(self, schema_id: int, data: bytes, what: str) -> Any:
        schema = self._schemas.get(schema_id)
        if schema is not None:
            return schema
        if self.registry is None:
            raise DeserializationError(f"{what}: Avro of schema id {schema_id}, but no schema "
                                       "registry is configured (JOBSTREAM_SCHEMA_REGISTRY_URL)",
                                       raw=data)  # fmt: skip
        try:
            found = self.registry.get_schema(schema_id)
        except registry_error() as exc:
            if exc.http_status_code == 404:
                raise DeserializationError(f"{what}: unknown schema id {schema_id}",
                                           raw=data) from None  # fmt: skip
            raise RegistryUnavailableError(f"schema registry: {exc}") from exc
        except Exception as exc:  # httpx's transport errors
            raise RegistryUnavailableError(f"schema registry: {exc}") from exc
        if found.schema_type not in (None, "AVRO"):
            raise DeserializationError(f"{what}: schema id {schema_id} is {found.schema_type}, "
                                       "not AVRO", raw=data)  # fmt: skip
        try:
            schema = parse_schema(json.loads(found.schema_str or ""))
        except Exception as exc:  # json's and fastavro's own errors
            raise DeserializationError(f"{what}: schema id {schema_id} is not Avro: {exc}",
                                       raw=data) from None  # fmt: skip
        self._schemas[schema_id] = schema
        return schema


def decode(record: SourceRecord, fmt: str, avro: AvroReader) -> Decoded:
    """The record as ``fmt`` reads it; DeserializationError with the reason if it does not."""
    raw_key, raw = record.key(), record.value()
    if raw_key is not None and fmt == "avro" and raw_key[:1] == b"\x00":
        key = avro.read(raw_key, "key")
    else:
        key = None if raw_key is None else _text(raw_key, "key")
    headers = {name: "" if data is None else _text(data, f"headers.{name}")
               for name, data in record.headers() or ()}  # fmt: skip
    if raw is None:
        value: Any = None
    elif fmt == "json":
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DeserializationError(f"value: not JSON: {exc}", raw=raw) from None
    elif fmt == "avro":
        value = avro.read(raw, "value")
    else:
        value = _text(raw, "value")
    kind, stamp = record.timestamp()
    return Decoded(topic=record.topic() or "", partition=record.partition() or 0,
                   offset=record.offset() or 0, key=key, value=value, headers=headers,
                   timestamp=stamp if kind else None)  # fmt: skip


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise DeserializationError(f"{what}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                                   raw=data) from None  # fmt: skip


def jsonable(value: Any) -> Any:
    """Avro's decoded value in JSON's shapes (see the module docstring)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and value != value:
        return None  # NaN: JSON has none
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    return value
