"""What a source record makes the trigger processor write: a job, nothing, or a dead
letter with the reason; decoding of JSON, raw text and Confluent-framed Avro."""

from __future__ import annotations

import io
import json
import struct

import orjson
import pytest
from fastavro import parse_schema, schemaless_writer

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.triggers.decode import AvroReader
from jobstream._pipeline.triggers.engine import (
    ERROR_HEADER,
    SOURCE_HEADER,
    TRIGGER_HEADER,
    Tally,
    TriggerEngine,
)
from jobstream._pipeline.triggers.ids import trigger_job_id
from jobstream._pipeline.triggers.model import Trigger
from tests.pipeline.triggers.records import FakeRecord, json_record
from tests.support.registry import FakeRegistry

NOW = 1_800_000_000_000
TOPICS = Topics(Settings(bootstrap_servers="unused:9092"))


def trigger(**fields: object) -> Trigger:
    data = {"name": "paid", "owner": "shop", "source": "orders",
            "filter": 'value.status == "paid"',
            "job": {"job_type": "order.ship", "params": {"order": "value.id", "who": "key",
                                                         "src": "headers.source"}}}  # fmt: skip
    data.update(fields)
    return Trigger.from_json(data)


def run(trig: Trigger, record: FakeRecord, avro: AvroReader | None = None) -> tuple[list, Tally]:
    tally = Tally()
    engine = TriggerEngine(TOPICS, avro or AvroReader(None))
    return engine.process([trig], record, NOW, tally), tally


def headers(output: object) -> dict[str, bytes]:
    return dict(output.headers)  # type: ignore[attr-defined]


def test_a_matching_record_submits_one_job_with_its_derived_id_and_params() -> None:
    record = json_record({"status": "paid", "id": 7}, key_=b"c-1", headers_=[("source", b"web")],
                         partition_=2, offset_=41)  # fmt: skip
    outputs, tally = run(trigger(), record)
    [out] = outputs
    assert out.topic == TOPICS.intake
    job = out.value.data
    assert isinstance(job, JobSubmitted)
    assert job.job_id == trigger_job_id("shop", "paid", "orders", 2, 41)
    assert out.key == job.job_id.encode()
    assert orjson.loads(job.spec.params) == {"order": 7, "who": "c-1", "src": "web"}
    assert job.spec.owner == "shop" and job.spec.job_type == "order.ship"
    assert job.spec.labels == {"trigger": "paid", "trigger.record": "orders/2/41"}
    assert tally.matched == {"shop/paid": 1}


def test_the_same_record_read_again_gives_the_same_job_id() -> None:
    record = json_record({"status": "paid", "id": 7}, key_=b"c", headers_=[("source", b"w")])
    first, _ = run(trigger(), record)
    again, _ = run(trigger(), record)
    assert first[0].value.data.job_id == again[0].value.data.job_id


def test_a_record_the_filter_passes_over_is_skipped() -> None:
    outputs, tally = run(trigger(), json_record({"status": "new", "id": 1}))
    assert outputs == [] and tally.skipped == {"shop/paid": 1}


@pytest.mark.parametrize(("value", "reason"), [
    (b"{not json", "value: not JSON"),
    (orjson.dumps({"id": 1}), "filter: no such member"),
    (orjson.dumps({"status": "paid"}), "job.params.order: the record has no value.id"),
])  # fmt: skip
def test_an_unreadable_record_is_dead_lettered_with_its_reason(value: bytes, reason: str) -> None:
    record = FakeRecord(value, key_=b"k", headers_=[("source", b"w")], offset_=5)
    outputs, tally = run(trigger(), record)
    [dead] = outputs
    assert dead.topic == TOPICS.triggers_dlq
    assert dead.value == value and dead.key == b"k"
    assert reason in headers(dead)[ERROR_HEADER].decode()
    assert headers(dead)[TRIGGER_HEADER] == b"shop/paid"
    assert headers(dead)[SOURCE_HEADER] == b"orders/0/5"
    assert headers(dead)["source"] == b"w"
    assert tally.refused == {"shop/paid": 1}


def test_a_job_that_breaks_a_submission_rule_is_dead_lettered_naming_the_field() -> None:
    trig = trigger(filter=None, job={"job_type": "t", "pass_value": True})
    outputs, _ = run(trig, json_record({"x": 1.5, "big": "a" * 1_100_000}))
    assert headers(outputs[0])[ERROR_HEADER].startswith(b"job.params")


def test_raw_records_and_a_whole_value_pass_through() -> None:
    raw = trigger(format="raw", filter='value.endsWith(".csv")',
                  job={"job_type": "file.ingest", "params": {"path": "value", "at": "offset"}})
    [out], _ = run(raw, FakeRecord(b"/in/a.csv", offset_=3))
    assert orjson.loads(out.value.data.spec.params) == {"path": "/in/a.csv", "at": 3}
    [dead], _ = run(raw, FakeRecord(b"\xff\xfe"))
    assert b"not UTF-8" in headers(dead)[ERROR_HEADER]
    whole = trigger(filter=None, job={"job_type": "t", "pass_value": True,
                                      "params": {"k": "key"}})  # fmt: skip
    [out], _ = run(whole, json_record({"a": [1, 2]}, key_=b"x"))
    assert orjson.loads(out.value.data.spec.params) == {"a": [1, 2], "k": "x"}


SCHEMA = {"type": "record", "name": "Order", "namespace": "shop",
          "fields": [{"name": "id", "type": "long"}, {"name": "status", "type": "string"},
                     {"name": "blob", "type": "bytes"}]}  # fmt: skip


def confluent(schema_id: int, value: dict) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(SCHEMA), value)
    return struct.pack(">bI", 0, schema_id) + body.getvalue()


def test_avro_in_confluents_wire_format_reads_through_the_registry() -> None:
    with FakeRegistry() as registry:
        schema_id = registry.add(json.dumps(SCHEMA))
        avro = AvroReader(registry.url)
        params = {"order": "value.id", "blob": "value.blob"}
        trig = trigger(format="avro", job={"job_type": "order.ship", "params": params})
        [out], _ = run(trig, FakeRecord(confluent(schema_id, {"id": 9, "status": "paid",
                                                              "blob": b"\x01"})), avro)
        assert orjson.loads(out.value.data.spec.params) == {"order": 9, "blob": "AQ=="}
        [dead], _ = run(trig, FakeRecord(confluent(schema_id + 50, {"id": 9, "status": "paid",
                                                                    "blob": b""})), avro)
        assert b"unknown schema id" in headers(dead)[ERROR_HEADER]
        [dead], _ = run(trig, FakeRecord(b"{}"), avro)
        assert b"not Confluent's Avro wire format" in headers(dead)[ERROR_HEADER]
        [dead], _ = run(trig, FakeRecord(confluent(schema_id, {"id": 9, "status": "paid",
                                                               "blob": b""})[:7]), avro)
        assert b"not Avro of schema id" in headers(dead)[ERROR_HEADER]


def test_no_registry_configured_dead_letters_avro_with_that_reason() -> None:
    trig = trigger(format="avro", filter=None, job={"job_type": "t"})
    [dead], _ = run(trig, FakeRecord(confluent(1, {"id": 1, "status": "x", "blob": b""})))
    assert b"no schema registry is configured" in headers(dead)[ERROR_HEADER]
