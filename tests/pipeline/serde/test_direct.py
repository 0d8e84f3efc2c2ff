"""The typed records' codecs (pipeline/serde/direct.py) against fastavro, byte for byte."""

from __future__ import annotations

import io

import pytest
from fastavro import schemaless_reader, schemaless_writer
from fastavro.utils import generate_many
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobstream._pipeline.errors import SerializationError
from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import JobLifecycle, Progress, evolve, plain, typed
from jobstream._pipeline.serde import (
    EVENT_NAMES,
    AvroDeserializer,
    AvroSerializer,
    Event,
    event_schemas,
)
from jobstream._pipeline.serde.avro import direct_codecs
from jobstream._pipeline.serde.direct import read_long, write_long
from tests.support.avro_events import ANY_EVENT

SCHEMAS = event_schemas()


def fastavro_bytes(name: str, data: object) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, SCHEMAS.current(name).parsed, data)
    return buf.getvalue()


def direct_bytes(event: Event) -> bytes:
    codecs = direct_codecs(SCHEMAS.current(event.name))
    assert codecs is not None
    out = bytearray()
    codecs[0](typed(event.name, event.data), out)
    return bytes(out)


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_every_event_has_direct_codecs(name: str) -> None:
    assert direct_codecs(SCHEMAS.current(name)) is not None


@given(event=ANY_EVENT)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_writes_fastavros_bytes_and_reads_them_back(event: Event) -> None:
    body = fastavro_bytes(event.name, event.data)
    assert direct_bytes(event) == body
    codecs = direct_codecs(SCHEMAS.current(event.name))
    assert codecs is not None
    record, end = codecs[1](b"xx" + body, 2)
    assert end == len(body) + 2
    assert record == typed(event.name, event.data)


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_generated_records_round_trip(name: str) -> None:
    for data in generate_many(SCHEMAS.current(name).parsed, 30):
        event = Event(name, data)
        body = direct_bytes(event)
        assert body == fastavro_bytes(name, data)
        reread = schemaless_reader(io.BytesIO(body), SCHEMAS.current(name).parsed, None)
        assert reread == data


@given(n=st.integers(-(2**63), 2**63 - 1))
def test_long_is_zigzag_varint(n: int) -> None:
    out = bytearray()
    write_long(out, n)
    assert bytes(out) == fastavro_long(n)
    assert read_long(bytes(out) + b"\x00", 0) == (n, len(out))


def fastavro_long(n: int) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, "long", n)
    return buf.getvalue()


def test_enums_read_back_as_their_members() -> None:
    record = JobLifecycle(kind=LifecycleKind.STARTED, job_id="j", at_ms=1,
                          progress=Progress(fraction=0.5, message="half", at_ms=2))  # fmt: skip
    event = AvroDeserializer()(AvroSerializer()(Event("JobLifecycle", record)))
    assert event.data == record
    assert event.data.kind is LifecycleKind.STARTED


def test_a_value_its_codec_cannot_write_gets_fastavros_error() -> None:
    bad = evolve(JobLifecycle(kind=LifecycleKind.STARTED, job_id="j", at_ms=1), at_ms="soon")
    with pytest.raises(Exception, match="at_ms"):
        AvroSerializer()(Event("JobLifecycle", bad))


@pytest.mark.parametrize(("field", "value"), [("at_ms", 1 << 63), ("at_ms", -(1 << 63) - 1),
                                               ("waiting_for", None)])
def test_what_avro_cannot_carry_is_refused_not_written(field: str, value: object) -> None:
    bad = evolve(JobLifecycle(kind=LifecycleKind.STARTED, job_id="j", at_ms=1), **{field: value})
    with pytest.raises(SerializationError):
        AvroSerializer()(Event("JobLifecycle", bad))


def test_a_long_past_64_bits_is_not_read() -> None:
    with pytest.raises(ValueError, match="64 bits"):
        read_long(b"\xff" * 9 + b"\x02", 0)


def test_bytes_left_over_are_not_read_as_the_record() -> None:
    value = AvroSerializer()(Event("JobLifecycle", JobLifecycle(kind=LifecycleKind.FIRED,
                                                                job_id="j", at_ms=1)))  # fmt: skip
    with pytest.raises(Exception, match="left over"):
        AvroDeserializer()(value + b"\x00")


def test_plain_records_still_write_through_cavro() -> None:
    record = JobLifecycle(kind=LifecycleKind.FIRED, job_id="j", at_ms=1)
    serializer = AvroSerializer()
    assert serializer(Event("JobLifecycle", plain(record))) == serializer(
        Event("JobLifecycle", record))
