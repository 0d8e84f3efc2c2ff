"""One record of any jobstream topic as a JSON object, for console inspection.

Every topic's values are Avro (single-object or Confluent framing: the events and
commands), JSON (jobs.status, the changelogs) or opaque bytes (a record the intake
dead-lettered because it was neither): a value is tried in that order, so no table of
topics is needed and a new topic reads as well as the old ones. Bytes that are not
UTF-8 (a key of the timers' changelog, an Avro ``bytes`` field) are written as base64.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import orjson
from confluent_kafka import Message

from jobstream._pipeline.errors import DeserializationError
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.serde import Event

AVRO_MAGICS = (b"\xc3\x01", b"\x00")
"""Single-object encoding, and the Confluent wire format."""

Deserialize = Callable[[bytes], Event]
JsonObject = dict[str, object]
"""A JSON line's object, before orjson writes it."""


def text_or_base64(raw: bytes) -> dict[str, str]:
    """``{"text": ...}`` for UTF-8 bytes, ``{"base64": ...}`` otherwise."""
    try:
        return {"text": raw.decode()}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}


def decode_value(raw: bytes, deserialize: Deserialize) -> JsonObject:
    """``{"event", "value"}`` for Avro, ``{"value"}`` for JSON, else the bytes (and why
    Avro framing did not decode)."""
    error = None
    if raw.startswith(AVRO_MAGICS):
        try:
            event = deserialize(raw)
        except DeserializationError as exc:
            error = exc.reason
        else:
            return {"event": event.name, "value": plain(event.data)}
    try:
        return {"value": orjson.loads(raw)}
    except orjson.JSONDecodeError:
        found: JsonObject = {"value": None, "raw": text_or_base64(raw)}
        if error is not None:
            found["error"] = error
        return found


def record_line(message: Message, deserialize: Deserialize) -> bytes:
    """One JSON line: where the record is, its key, headers and decoded value.

    A tombstone (no value) has ``"value": null`` and no ``event``.
    """
    key, value = message.key(), message.value()
    line: JsonObject = {
        "topic": message.topic(), "partition": message.partition(),
        "offset": message.offset(), "timestamp_ms": message.timestamp()[1],
        "key": None if key is None else _plain(key),
    }  # fmt: skip
    headers = message.headers()
    if headers:  # a consumed record's are a list of pairs; the type allows a mapping too
        pairs = headers.items() if isinstance(headers, dict) else headers
        line["headers"] = {name: None if raw is None else _plain(raw) for name, raw in pairs}
    line.update({"value": None} if value is None else decode_value(value, deserialize))
    return orjson.dumps(line, default=bytes_as_json)


def _plain(raw: str | bytes) -> str:
    """Text as it is; other bytes as ``base64:<...>``, which no jobstream key looks like."""
    if isinstance(raw, str):
        return raw
    shown = text_or_base64(raw)
    return shown.get("text") or "base64:" + shown.get("base64", "")


def bytes_as_json(value: object) -> str:
    """orjson's fallback for bytes in a record (a checkpoint's state): ``base64:<...>``."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "base64:" + base64.b64encode(bytes(value)).decode()
    raise TypeError(f"{type(value).__name__} is not JSON")
