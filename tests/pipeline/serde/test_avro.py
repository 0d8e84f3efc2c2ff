"""Avro serde: round trips, the single-object header, and corrupt input."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro import parse_schema, schemaless_writer
from fastavro.schema import to_parsing_canonical_form
from fastavro.utils import generate_many
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobstream._pipeline.errors import DeserializationError, JobstreamError, SerializationError
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.serde import (
    EVENT_NAMES,
    AvroDeserializer,
    AvroSerializer,
    Event,
    event_schemas,
    make_serde,
)
from tests.support.avro_events import ANY_EVENT
from tests.support.registry import FIRST_ID, FakeRegistry

SCHEMAS = event_schemas()
SERIALIZER = AvroSerializer()
DESERIALIZER = AvroDeserializer()


# --- CRC-64-AVRO, written out from the Avro specification ("Schema Fingerprints"),
# independently of fastavro, so that a wrong fingerprint or byte order is caught.
EMPTY = 0xC15D213AA4D7A795


def _crc64_table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ EMPTY if fp & 1 else fp >> 1
        table.append(fp)
    return table


CRC64_TABLE = _crc64_table()


def crc64_avro(data: bytes) -> int:
    fp = EMPTY
    for byte in data:
        fp = (fp >> 8) ^ CRC64_TABLE[(fp ^ byte) & 0xFF]
    return fp


@pytest.mark.parametrize(
    ("canonical", "signed_fingerprint"),
    [
        # Published in Avro's share/test/data/schema-tests.txt, as Java's signed longs.
        ('"null"', 7195948357588979594),
        ('"boolean"', -6970731678124411036),
        ('{"name":"foo","type":"fixed","size":15}', 1756455273707447556),
    ],
)
def test_crc64_avro_matches_the_spec_vectors(canonical: str, signed_fingerprint: int) -> None:
    assert crc64_avro(canonical.encode()) == signed_fingerprint & 0xFFFF_FFFF_FFFF_FFFF


JOB_CANCELLED_CANONICAL = (
    '{"name":"io.jobstream.JobCancelled","type":"record","fields":['
    '{"name":"job_id","type":"string"},'
    '{"name":"workflow_id","type":["null","string"]},'
    '{"name":"requested_at_ms","type":"long"},'
    '{"name":"reason","type":["null","string"]},'
    '{"name":"requested_by","type":["null","string"]}]}'
)


def test_header_is_c301_then_little_endian_crc64_of_canonical_form() -> None:
    value = SERIALIZER(Event("JobCancelled", {"job_id": "j1", "requested_at_ms": 5}))

    assert SCHEMAS.current("JobCancelled").canonical == JOB_CANCELLED_CANONICAL
    expected = crc64_avro(JOB_CANCELLED_CANONICAL.encode()).to_bytes(8, "little")
    assert value[:2] == b"\xc3\x01"
    assert value[2:10] == expected
    # Body: "j1" (len 2 zigzag = 0x04), null union branch, 5 zigzag = 0x0a, two null branches.
    assert value[10:] == b"\x04j1\x00\x0a\x00\x00"


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_every_event_header_uses_its_own_fingerprint(name: str) -> None:
    current = SCHEMAS.current(name)
    record = next(generate_many(current.parsed, 1))
    value = SERIALIZER(Event(name, record))
    assert value[2:10] == crc64_avro(current.canonical.encode()).to_bytes(8, "little")


# --- Round trips ----------------------------------------------------------------

def as_written(event: Event) -> Event:
    """A decoded event with its record as the builtins it was written from."""
    return Event(event.name, plain(event.data))


@given(event=ANY_EVENT)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_round_trip_hypothesis(event: Event) -> None:
    assert as_written(DESERIALIZER(SERIALIZER(event))) == event


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_round_trip_generated_records(name: str) -> None:
    for record in generate_many(SCHEMAS.current(name).parsed, 50):
        event = Event(name, record)
        assert as_written(DESERIALIZER(SERIALIZER(event))) == event


def test_missing_fields_with_defaults_are_written_as_defaults() -> None:
    spec = {"job_type": "report.generate", "owner": "billing"}
    value = SERIALIZER(Event("JobSubmitted", {"job_id": "j", "submitted_at_ms": 1, "spec": spec}))

    data = DESERIALIZER(value).data
    assert data["idempotency_key"] is None
    assert data["spec"]["params"] == "{}"
    assert data["spec"]["priority"] == "NORMAL"
    assert data["spec"]["depends_on"] == []
    assert data["spec"]["labels"] == {}


# --- Encoding errors ------------------------------------------------------------


HEARTBEAT = {
    "worker_id": "w",
    "host": "h",
    "pid": 1,
    "job_types": [],
    "capacity": 1,
    "started_at_ms": 1,
    "at_ms": 2,
}


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        (Event("JobCancelled", {"job_id": 7, "requested_at_ms": 1}), "job_id"),
        (Event("JobCancelled", {"job_id": "j"}), "requested_at_ms"),
        (Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1, "jobid": "x"}), "jobid"),
        (Event("JobCancelled", ["j", 1]), "must be a dict"),  # type: ignore[arg-type]
        (Event("WorkerHeartbeat", {**HEARTBEAT, "state": "ASLEEP"}), "ASLEEP"),
    ],
)
def test_encoding_a_bad_record_names_event_and_problem(event: Event, problem: str) -> None:
    with pytest.raises(SerializationError) as raised:
        SERIALIZER(event)
    assert event.name in str(raised.value)
    assert problem in str(raised.value)


def test_unknown_event_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="unknown event 'JobExploded'"):
        SERIALIZER(Event("JobExploded", {}))


def test_not_an_event_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="expected an Event"):
        SERIALIZER({"job_id": "j"})  # type: ignore[arg-type]


@pytest.mark.parametrize("pid", [2**40, 1.5, True])
def test_validate_rejects_what_the_writer_would_silently_coerce(pid: object) -> None:
    heartbeat = {**HEARTBEAT, "pid": pid}
    with pytest.raises(SerializationError, match=r"WorkerHeartbeat\.pid"):
        AvroSerializer(validate=True)(Event("WorkerHeartbeat", heartbeat))


# --- Decoding errors: always DeserializationError, reason given, raw kept --------

VALID = SERIALIZER(Event("JobCancelled", {"job_id": "j1", "requested_at_ms": 5, "reason": "r"}))
UNKNOWN_FP = bytes(range(8))


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "empty value"),
        (None, "empty value"),
        (b"\xc3", "unknown magic bytes c3"),
        (b"\xc3\x02" + VALID[2:], "unknown magic bytes c302"),
        (b"\x7b\x22", "unknown magic bytes 7b22"),
        (VALID[:9], "truncated header: 9 bytes"),
        (b"\xc3\x01" + UNKNOWN_FP + VALID[10:], f"unknown fingerprint {UNKNOWN_FP.hex()}"),
        (VALID[:-1], "truncated or corrupt JobCancelled@current body"),
        (VALID + b"\x00", "corrupt JobCancelled@current body: 1 bytes left over"),
        (b"\x00\x00\x00\x00\x01" + VALID[10:], "no schema registry configured"),
        (b"\x00\x00\x01", "truncated header: 3 bytes"),
    ],
)
def test_bad_value_reason(raw: bytes | None, reason: str) -> None:
    ctx = SerializationContext("jobs.intake", MessageField.VALUE)
    with pytest.raises(DeserializationError) as raised:
        DESERIALIZER(raw, ctx)
    assert reason in raised.value.reason
    assert raised.value.raw == raw
    assert raised.value.topic == "jobs.intake"


def decodes_or_explains(raw: bytes) -> None:
    """The contract under corruption: an Event, or DeserializationError with raw kept."""
    try:
        event = DESERIALIZER(raw)
    except DeserializationError as exc:
        assert exc.reason
        assert exc.raw == raw
    else:
        assert event.name in EVENT_NAMES


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_every_truncation_fails_cleanly(name: str) -> None:
    for record in generate_many(SCHEMAS.current(name).parsed, 5):
        value = SERIALIZER(Event(name, record))
        for cut in range(len(value)):
            with pytest.raises(DeserializationError) as raised:
                DESERIALIZER(value[:cut])
            assert raised.value.raw == value[:cut]


@st.composite
def mutated(draw: st.DrawFn, *, keep_header: bool = False) -> bytes:
    value = bytearray(SERIALIZER(draw(ANY_EVENT)))
    first = 10 if keep_header else 0
    for _ in range(draw(st.integers(1, 4))):
        if len(value) <= first:
            break
        at = draw(st.integers(first, len(value) - 1))
        action = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if action == "flip":
            value[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set":
            value[at] = draw(st.integers(0, 255))
        elif action == "insert":
            value[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del value[at]
    return bytes(value)


@given(raw=mutated())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_values_decode_or_raise_deserialization_error(raw: bytes) -> None:
    decodes_or_explains(raw)


@given(raw=mutated(keep_header=True))
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_bodies_decode_or_raise_deserialization_error(raw: bytes) -> None:
    decodes_or_explains(raw)


HEADERS = [b"\xc3\x01" + SCHEMAS.current(name).fingerprint for name in EVENT_NAMES]


@given(
    raw=st.binary(max_size=64)
    | st.sampled_from(HEADERS).flatmap(
        lambda header: st.binary(max_size=200).map(lambda body: header + body)
    )
)
@settings(max_examples=500)
def test_random_bytes_decode_or_raise_deserialization_error(raw: bytes) -> None:
    decodes_or_explains(raw)


def zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def test_huge_block_count_fails_fast_instead_of_allocating() -> None:
    header = b"\xc3\x01" + SCHEMAS.current("WorkerHeartbeat").fingerprint
    # worker_id "w", host "h", pid 1, then a job_types array claiming 2**62 items.
    body = b"\x02w\x02h\x02" + zigzag_varint(2**62) + b"\x02a"
    with pytest.raises(DeserializationError, match="WorkerHeartbeat"):
        DESERIALIZER(header + body)


def test_writer_schema_is_not_mistaken_for_another_event() -> None:
    """Fingerprints differ between events, so a header picks exactly one schema."""
    fingerprints = {SCHEMAS.current(name).fingerprint for name in EVENT_NAMES}
    assert len(fingerprints) == len(EVENT_NAMES)


def test_body_is_plain_avro_binary() -> None:
    """What follows the header is exactly fastavro's schemaless encoding."""
    current = SCHEMAS.current("JobSubmitted")
    record = next(generate_many(current.parsed, 1))
    buf = io.BytesIO()
    schemaless_writer(buf, current.parsed, record)
    assert SERIALIZER(Event("JobSubmitted", record))[10:] == buf.getvalue()


# --- Confluent wire format against a real HTTP registry stand-in -----------------
#
# No schema registry runs on this machine, so a tiny HTTP server implements the two
# endpoints the serde uses, as Confluent documents them, and the real
# SchemaRegistryClient talks to it over 127.0.0.1.

@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    with FakeRegistry() as server:
        yield server


def client(url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": url, "max.retries": 0})


def test_confluent_frame_is_zero_then_big_endian_id_then_same_body(
    registry: FakeRegistry,
) -> None:
    writer = AvroSerializer(registry=client(registry.url))
    # A separate client, so reading has to fetch each schema by id.
    reader = AvroDeserializer(registry=client(registry.url))

    for name in EVENT_NAMES:
        for record in generate_many(SCHEMAS.current(name).parsed, 3):
            event = Event(name, record)
            value = writer(event)
            [schema_id] = registry.subjects[f"io.jobstream.{name}"]
            assert value[0] == 0
            assert value[1:5] == schema_id.to_bytes(4, "big")
            assert value[5:] == SERIALIZER(event)[10:]
            assert as_written(reader(value)) == event

    posts = [path for method, path in registry.requests if method == "POST"]
    gets = [path for method, path in registry.requests if method == "GET"]
    assert len(posts) == len(EVENT_NAMES), "one registration per event, then cached"
    assert len(gets) == len(EVENT_NAMES), "one fetch per schema id, then cached"
    assert FIRST_ID.to_bytes(4, "big") == b"\x00\x01\x02\x03"


def test_registered_schema_is_the_full_current_schema(registry: FakeRegistry) -> None:
    writer = AvroSerializer(registry=client(registry.url))
    writer(Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1}))

    [text] = registry.ids
    registered = parse_schema(json.loads(text))
    current = SCHEMAS.current("JobCancelled")
    assert to_parsing_canonical_form(registered) == current.canonical
    assert '"default":null' in text, "defaults are what a registry checks compatibility on"


def test_registry_deserializer_still_reads_single_object_values(registry: FakeRegistry) -> None:
    reader = AvroDeserializer(registry=client(registry.url))
    assert reader(VALID).name == "JobCancelled"
    assert registry.requests == []


def test_unknown_schema_id_is_a_deserialization_error(registry: FakeRegistry) -> None:
    raw = b"\x00" + (999).to_bytes(4, "big") + VALID[10:]
    with pytest.raises(DeserializationError, match="unknown schema id 999") as raised:
        AvroDeserializer(registry=client(registry.url))(raw)
    assert raised.value.raw == raw


def test_registry_down_is_retryable_not_a_bad_record(registry: FakeRegistry) -> None:
    registry.fail_with = 503
    event = Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1})
    raw = b"\x00" + FIRST_ID.to_bytes(4, "big") + VALID[10:]

    with pytest.raises(JobstreamError, match="unavailable") as raised:
        AvroSerializer(registry=client(registry.url))(event)
    assert not isinstance(raised.value, SerializationError)
    assert raised.value.retryable

    with pytest.raises(JobstreamError, match="unavailable") as raised:
        AvroDeserializer(registry=client(registry.url))(raw)
    assert not isinstance(raised.value, DeserializationError)
    assert raised.value.retryable


def test_registry_unreachable_is_retryable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    event = Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1})
    with pytest.raises(JobstreamError, match="unavailable") as raised:
        AvroSerializer(registry=client(url))(event)
    assert raised.value.retryable


def test_registry_rejecting_a_schema_is_a_serialization_error(registry: FakeRegistry) -> None:
    registry.fail_with = 409  # incompatible with the subject's earlier versions
    with pytest.raises(SerializationError, match=r"rejected io\.jobstream\.JobCancelled"):
        AvroSerializer(registry=client(registry.url))(
            Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1})
        )


def test_make_serde_with_url_uses_the_registry(registry: FakeRegistry) -> None:
    serializer, deserializer = make_serde(registry.url)
    data = {"job_id": "j", "workflow_id": None, "requested_at_ms": 1, "reason": None,
            "requested_by": None}  # fmt: skip
    for _ in range(3):
        decoded = deserializer(serializer(Event("JobCancelled", data)))
        assert as_written(decoded) == Event("JobCancelled", data)
    assert [method for method, _ in registry.requests] == ["POST", "GET"]
