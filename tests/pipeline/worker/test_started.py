"""STARTED spliced around the received execution bytes is what the serializer writes."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from fastavro import schemaless_writer

from jobstream._pipeline.model.records import ErrorInfo, RetryPolicyRecord, evolve, plain
from jobstream._pipeline.serde import AvroSerializer, Event, EventSchemas, event_schemas
from jobstream._pipeline.serde.avro import SINGLE_OBJECT_MAGIC
from jobstream._pipeline.worker import outcomes
from jobstream._pipeline.worker.started import StartedEncoder
from tests.pipeline.worker.executions import execution_requested
from tests.support.pipeline import DESERIALIZE, SERIALIZE


def error(attempt: int) -> ErrorInfo:
    return ErrorInfo(attempt=attempt, error_type="ConnectionError", message="refused",
                     traceback="Traceback ...", retryable=True, at_ms=1_700_000_000_000,
                     worker_id="w-1")  # fmt: skip


def executions() -> list[Event]:
    plain = execution_requested(params={"n": 1})
    cron = execution_requested(overlap="SKIP", timeout_ms=5_000, priority="HIGH")
    retried = execution_requested(attempt=3, raw_params='{"é": "ünïcode"}')
    spec = evolve(retried.data.spec, labels={"team": "data"}, depends_on=["a", "b"],
                  retry=RetryPolicyRecord(max_attempts=5, initial_backoff_ms=10,
                                          backoff_coefficient=2.0, max_backoff_ms=100,
                                          jitter=0.0, non_retryable_errors=["X"]))  # fmt: skip
    retried = Event.of(evolve(retried.data, workflow_id="wf-1", idempotency_key="key-1",
                              errors=[error(1), error(2)], spec=spec))  # fmt: skip
    return [plain, cron, retried]


@pytest.mark.parametrize("execution", executions(), ids=["plain", "cron", "retried"])
def test_the_spliced_record_is_byte_for_byte_the_serialized_one(execution: Event) -> None:
    encode = StartedEncoder(SERIALIZE, event_schemas())
    assert encode.splices, "JobLifecycle must end with its execution for the fast path"
    received = SERIALIZE(execution)
    data = DESERIALIZE(received).data
    started = outcomes.started(data, worker_id="w-1", now_ms=1_700_000_000_123)
    encoded = encode(started, received)
    assert encoded == SERIALIZE(started)
    assert DESERIALIZE(encoded).data["execution"] == execution.data


def test_bytes_of_another_schema_version_or_framing_are_encoded_whole() -> None:
    schemas = event_schemas()
    encode = StartedEncoder(SERIALIZE, schemas)
    data = execution_requested().data
    started = outcomes.started(data, worker_id="w-1", now_ms=1)
    v1 = schemas.released("v1")["ExecutionRequested"]
    body = io.BytesIO()
    schemaless_writer(body, v1.parsed, plain(data))
    older = SINGLE_OBJECT_MAGIC + v1.fingerprint + body.getvalue()
    confluent = b"\x00\x00\x00\x00\x07" + SERIALIZE(Event("ExecutionRequested", data))[10:]
    for received in (older, confluent, None):
        assert encode(started, received) == SERIALIZE(started)


def test_no_splicing_when_execution_is_not_the_last_field(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(event_schemas().root, root)
    path = root / "io.jobstream.JobLifecycle.avsc"
    schema = json.loads(path.read_text())
    schema["fields"].append({"name": "note", "type": ["null", "string"], "default": None})
    path.write_text(json.dumps(schema))
    schemas = EventSchemas(root)
    serialize = AvroSerializer(schemas=schemas)
    encode = StartedEncoder(serialize, schemas)
    data = execution_requested().data
    started = outcomes.started(data, worker_id="w-1", now_ms=1)
    received = serialize(Event("ExecutionRequested", data))
    assert encode(started, received) == serialize(started)
