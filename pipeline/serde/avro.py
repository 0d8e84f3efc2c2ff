"""Avro serializer and deserializer on confluent-kafka's ``Serializer`` contract.

Two wire formats:

* Avro single-object encoding (the default, no service needed)::

      C3 01 | CRC-64-AVRO fingerprint of the writer schema, 8 bytes little-endian | body

* Confluent's format, when a schema registry client is given::

      00 | schema id, 4 bytes big-endian | body

The body is Avro binary in both. The deserializer
recognises either from the first byte, so records written before a registry was
configured stay readable after. The reader schema is always the current schema of
the event, so records from every released writer version resolve into today's shape.

Hot path: one dictionary lookup, one precomputed header, one call of the current
schema's codec written for the typed records (pipeline/serde/direct.py), which writes a
STARTED at a quarter of the CPU of turning it into a dict for cavro, and reads it at
three quarters of cavro's reading and typing (docs/benchmarks.md, "Codecs").
cavro's compiled (Cython) codec writes a record given as a dict, at a third of
fastavro's CPU (docs/benchmarks.md, "Codecs"). fastavro does the rest: reading records of
an older writer into today's shape, ``validate=True``, and every record the others
refuse, so that an error names the field at fault as it always has. Schemas are parsed when the
serde is built; the registry is asked once per event (writing) or once per schema id
(reading), and the answer is cached.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cavro
import msgspec
from confluent_kafka.serialization import Deserializer, SerializationContext, Serializer
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.schema import fingerprint, to_parsing_canonical_form
from fastavro.validation import ValidationError as AvroValidationError
from fastavro.validation import validate as avro_validate

from jobstream._pipeline.errors import DeserializationError, JobstreamError, SerializationError
from jobstream._pipeline.model.records import Event, Record, plain, typed
from jobstream._pipeline.serde import direct
from jobstream._pipeline.serde.registry import avro_schema, registry_client, registry_error
from jobstream._pipeline.serde.schemas import NAMESPACE, EventSchemas, WriterSchema, event_schemas

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

logger = logging.getLogger(__name__)

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
SINGLE_OBJECT_HEADER_SIZE = 10
CONFLUENT_MAGIC = 0
CONFLUENT_HEADER_SIZE = 5


CAVRO_OPTIONS = cavro.DEFAULT_OPTIONS.replace(
    record_decodes_to_dict=True,
    record_can_encode_dict=True,
    record_encode_use_defaults=True,
    # fastavro's rules: a field the schema lacks, or a value of another type, is refused.
    record_allow_extra_fields=False,
    coerce_values_to_str=False,
    coerce_values_to_int=False,
    coerce_values_to_boolean=False,
)


def compiled(schema_json: str) -> Any:
    """cavro's codec for one schema (cavro is untyped)."""
    return cavro.Schema(schema_json, options=CAVRO_OPTIONS)


_DIRECT: dict[bytes, tuple[direct.Writer, direct.Reader] | None] = {}


def direct_codecs(schema: WriterSchema) -> tuple[direct.Writer, direct.Reader] | None:
    """The typed records' codecs of a current schema, made once per process; None for a
    schema its record type does not mirror (a test's own schemas), which cavro serves."""
    if schema.fingerprint not in _DIRECT:
        try:
            _DIRECT[schema.fingerprint] = direct.codecs(schema.parsed)
        except Exception as exc:  # a shape the codecs do not write, or a type that differs
            logger.debug("no direct codec for %s: %s", schema.name, exc)
            _DIRECT[schema.fingerprint] = None
    return _DIRECT[schema.fingerprint]


@dataclass(frozen=True, slots=True)
class _Writer:
    header: bytes
    parsed: dict[str, Any]
    fast: Any
    """cavro's codec: dicts."""
    direct: direct.Writer | None
    """The typed record's codec (None: cavro writes it too)."""


def _writer(header: bytes, current: WriterSchema) -> _Writer:
    codecs = direct_codecs(current)
    return _Writer(header, current.parsed, compiled(current.to_json()),
                   codecs[0] if codecs else None)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Decoder:
    name: str
    label: str
    """Event and writer version, for error messages."""
    writer: dict[str, Any]
    reader: dict[str, Any] | None
    """None when the writer is the current schema: fastavro then skips resolution."""
    fast: Any = None
    """cavro's codec when the writer is the current schema (no resolution to do)."""
    direct: direct.Reader | None = None
    """The typed record's codec, likewise."""


def _problems(exc: AvroValidationError, limit: int = 300) -> str:
    """fastavro's messages can embed a whole schema; keep each one readable."""
    texts = (str(e) for e in exc.errors)
    return "; ".join(t if len(t) <= limit else t[:limit] + "..." for t in texts)


def _registry_failure(action: str, exc: Exception) -> JobstreamError:
    """A registry that is down is not a bad record: raise a retryable error instead."""
    return JobstreamError(f"schema registry unavailable while {action}: {exc}")


class AvroSerializer(Serializer):
    """Encode an :class:`Event` with the current schema of its name.

    With ``registry`` set, writes Confluent's wire format and registers each schema
    on first use under the record-name subject strategy (subject
    ``io.jobstream.<Name>``), not ``<topic>-value``: one topic (jobs.intake, for one)
    carries several event types, and a topic subject would force them into one schema.

    fastavro's writer does not range-check ``int`` fields and truncates a float given
    for an ``int``/``long``; ``validate=True`` checks every record against the schema
    first, at about three times the cost of encoding. Use it where the data comes
    from outside (the HTTP intake); records built by our own code do not need it.
    """

    __slots__ = ("_registry", "_schemas", "_validate", "_writers")

    def __init__(
        self,
        *,
        schemas: EventSchemas | None = None,
        registry: SchemaRegistryClient | None = None,
        validate: bool = False,
    ) -> None:
        self._schemas = schemas if schemas is not None else event_schemas()
        self._registry = registry
        self._validate = validate
        self._writers: dict[str, _Writer] = {}
        if registry is None:
            for name in self._schemas.names:
                current = self._schemas.current(name)
                self._writers[name] = _writer(SINGLE_OBJECT_MAGIC + current.fingerprint, current)

    def __call__(self, obj: Event, ctx: SerializationContext | None = None) -> bytes:
        if not isinstance(obj, Event):
            raise SerializationError(f"expected an Event, got {type(obj).__name__}")
        writer = self._writers.get(obj.name) or self._register(obj.name)
        if isinstance(obj.data, Record):
            if writer.direct is not None and not self._validate:
                out = bytearray(writer.header)
                try:
                    writer.direct(obj.data, out)
                    return bytes(out)
                except Exception:  # fastavro below says what is wrong
                    pass
            obj = Event(obj.name, plain(obj.data))
        if self._validate:
            self._check(obj, writer.parsed)
        else:
            try:
                return writer.header + writer.fast.binary_encode(obj.data)
            except Exception:  # fastavro below says what is wrong, or writes it after all
                pass
        buf = io.BytesIO()
        buf.write(writer.header)
        try:
            schemaless_writer(buf, writer.parsed, obj.data, strict_allow_default=True)
        # fastavro reports bad data as ValueError, TypeError, OverflowError, KeyError or
        # AttributeError depending on the field type and on its C or Python writer.
        except Exception as exc:
            raise SerializationError(self._explain(obj, writer.parsed, exc)) from exc
        return buf.getvalue()

    def _check(self, obj: Event, parsed: dict[str, Any]) -> None:
        try:
            avro_validate(obj.data, parsed, raise_errors=True)
        except AvroValidationError as exc:
            raise SerializationError(f"cannot encode {obj.name}: {_problems(exc)}") from exc

    @staticmethod
    def _explain(obj: Event, parsed: dict[str, Any], exc: Exception) -> str:
        """Name the field at fault: the validator says where, the writer often does not."""
        detail = f"{type(exc).__name__}: {exc}"
        if not isinstance(obj.data, dict):
            detail = f"data must be a dict, not {type(obj.data).__name__}"
        else:
            try:
                avro_validate(obj.data, parsed, raise_errors=True)
            except AvroValidationError as invalid:
                detail = _problems(invalid)
            except Exception:  # the validator can trip where the writer did; keep its words
                logger.debug("validator failed explaining %s", obj.name, exc_info=True)
        return f"cannot encode {obj.name}: {detail}"

    def _register(self, name: str) -> _Writer:
        """First use of an event with a registry (or an unknown event name)."""
        try:
            current = self._schemas.current(name)
        except KeyError:
            known = ", ".join(self._schemas.names)
            raise SerializationError(f"unknown event {name!r}; known: {known}") from None
        assert self._registry is not None, "single-object writers are all built in __init__"
        subject = current.full_name
        try:
            schema = avro_schema(current.to_json())
            schema_id = self._registry.register_schema(subject, schema)
        except registry_error() as exc:
            if 400 <= exc.http_status_code < 500:
                raise SerializationError(f"schema registry rejected {subject}: {exc}") from exc
            raise _registry_failure(f"registering {subject}", exc) from exc
        # The client lets its HTTP library's transport errors through (httpx or httpx2,
        # whichever is installed), so anything else here means the registry is unreachable.
        except Exception as exc:
            raise _registry_failure(f"registering {subject}", exc) from exc
        writer = _writer(bytes([CONFLUENT_MAGIC]) + schema_id.to_bytes(4, "big"), current)
        self._writers[name] = writer
        return writer


class AvroDeserializer(Deserializer):
    """Decode single-object or Confluent-framed Avro into an :class:`Event`.

    Every failure that is the record's fault raises DeserializationError with a
    reason and the raw bytes, for the dead-letter path. A registry that cannot be
    reached raises a (retryable) JobstreamError instead: the record may be fine.
    """

    __slots__ = ("_by_fingerprint", "_by_id", "_registry", "_schemas")

    def __init__(
        self,
        *,
        schemas: EventSchemas | None = None,
        registry: SchemaRegistryClient | None = None,
    ) -> None:
        self._schemas = schemas if schemas is not None else event_schemas()
        self._registry = registry
        self._by_id: dict[int, _Decoder] = {}
        self._by_fingerprint: dict[bytes, _Decoder] = {}
        for ws in self._schemas.writer_schemas():
            label = f"{ws.name}@{ws.version}"
            self._by_fingerprint[ws.fingerprint] = self._decoder(
                ws.name, label, ws.parsed, ws.fingerprint
            )

    def _decoder(self, name: str, label: str, writer: dict[str, Any], fp: bytes) -> _Decoder:
        current = self._schemas.current(name)
        if fp == current.fingerprint:
            codecs = direct_codecs(current)
            return _Decoder(name, label, writer, None, compiled(current.to_json()),
                            codecs[1] if codecs else None)  # fmt: skip
        return _Decoder(name, label, writer, current.parsed)

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Event:
        if not value:
            raise self._error("empty value", value, ctx)
        if value[:2] == SINGLE_OBJECT_MAGIC:
            if len(value) < SINGLE_OBJECT_HEADER_SIZE:
                raise self._error(f"truncated header: {len(value)} bytes", value, ctx)
            decoder = self._by_fingerprint.get(value[2:SINGLE_OBJECT_HEADER_SIZE])
            if decoder is None:
                raise self._error(f"unknown fingerprint {value[2:10].hex()}", value, ctx)
            offset = SINGLE_OBJECT_HEADER_SIZE
        elif value[0] == CONFLUENT_MAGIC:
            if len(value) < CONFLUENT_HEADER_SIZE:
                raise self._error(f"truncated header: {len(value)} bytes", value, ctx)
            schema_id = int.from_bytes(value[1:CONFLUENT_HEADER_SIZE], "big")
            decoder = self._by_id.get(schema_id) or self._fetch(schema_id, value, ctx)
            offset = CONFLUENT_HEADER_SIZE
        else:
            raise self._error(f"unknown magic bytes {value[:2].hex()}", value, ctx)

        if decoder.direct is not None:
            try:
                record, end = decoder.direct(value, offset)
                if end == len(value):
                    return Event(decoder.name, record)
            except Exception:  # fastavro below reads it again and names what is wrong
                pass
        buf = io.BytesIO(value)
        buf.seek(offset)
        if decoder.fast is not None:
            try:
                data = decoder.fast.binary_read(cavro.FileReader(buf))
                if buf.tell() == len(value):
                    return self._typed(decoder, data, value, ctx)
            except Exception:  # fastavro below reads it again and names what is wrong
                pass
            buf.seek(offset)
        try:
            data = schemaless_reader(buf, decoder.writer, decoder.reader)
        except SchemaResolutionError as exc:  # the schemas broke an evolution rule
            reason = f"{decoder.label} cannot be read as the current {decoder.name}: {exc}"
            raise self._error(reason, value, ctx) from exc
        # Corrupt input surfaces as whatever the reader was doing when the bytes ran
        # out or stopped making sense (EOFError, UnicodeDecodeError, IndexError,
        # ValueError, MemoryError, ...). A poison record must never stop the consumer.
        except Exception as exc:
            reason = f"truncated or corrupt {decoder.label} body: {type(exc).__name__}: {exc}"
            raise self._error(reason, value, ctx) from exc
        if buf.tell() != len(value):
            reason = f"corrupt {decoder.label} body: {len(value) - buf.tell()} bytes left over"
            raise self._error(reason, value, ctx)
        return self._typed(decoder, data, value, ctx)

    def _typed(self, decoder: _Decoder, data: object, value: bytes,
               ctx: SerializationContext | None) -> Event:  # fmt: skip
        try:
            return Event(decoder.name, typed(decoder.name, data))
        except msgspec.ValidationError as exc:  # a schema and its type disagree: our bug
            raise self._error(f"{decoder.label} does not fit its type: {exc}", value, ctx) from exc

    @staticmethod
    def _error(
        reason: str, value: bytes | None, ctx: SerializationContext | None
    ) -> DeserializationError:
        return DeserializationError(reason, raw=value, topic=ctx.topic if ctx else None)

    def _fetch(self, schema_id: int, value: bytes, ctx: SerializationContext | None) -> _Decoder:
        """Fetch and parse a writer schema by id; once per id for the process."""
        if self._registry is None:
            raise self._error(
                f"Confluent framing (schema id {schema_id}) but no schema registry configured",
                value,
                ctx,
            )
        try:
            schema = self._registry.get_schema(schema_id)
        except registry_error() as exc:
            if exc.http_status_code == 404:
                raise self._error(f"unknown schema id {schema_id}", value, ctx) from exc
            raise _registry_failure(f"fetching schema id {schema_id}", exc) from exc
        except Exception as exc:  # transport errors of httpx/httpx2; see AvroSerializer
            raise _registry_failure(f"fetching schema id {schema_id}", exc) from exc

        where = f"schema id {schema_id}"
        if schema.schema_type not in (None, "AVRO"):
            raise self._error(f"{where} is {schema.schema_type}, not AVRO", value, ctx)
        try:
            writer = parse_schema(json.loads(schema.schema_str or ""))
        except Exception as exc:  # json and fastavro each raise their own types
            raise self._error(f"{where} is not valid Avro: {exc}", value, ctx) from exc
        full_name = writer.get("name", "") if isinstance(writer, dict) else ""
        name = full_name.removeprefix(f"{NAMESPACE}.")
        if not isinstance(writer, dict) or name not in self._schemas.names:
            raise self._error(
                f"{where} is {full_name or 'not a record'}, not a jobstream event",
                value,
                ctx,
            )
        fp = bytes.fromhex(fingerprint(to_parsing_canonical_form(writer), "CRC-64-AVRO"))
        decoder = self._decoder(name, f"{name}@id{schema_id}", writer, fp)
        self._by_id[schema_id] = decoder
        return decoder


def make_serde(
    schema_registry_url: str | None = None, *, schemas: EventSchemas | None = None
) -> tuple[AvroSerializer, AvroDeserializer]:
    """A serializer and deserializer for a process, sharing one registry client.

    Without a URL both use single-object encoding and need no service.
    """
    registry = registry_client({"url": schema_registry_url}) if schema_registry_url else None
    return (
        AvroSerializer(schemas=schemas, registry=registry),
        AvroDeserializer(schemas=schemas, registry=registry),
    )
