"""Old writers, current readers: every released schema version stays readable.

See schemas/README.md for the rules this enforces and how to release a version.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastavro import schemaless_writer
from fastavro.utils import generate_many
from fastavro.validation import validate

from jobstream._pipeline.errors import ConfigurationError, DeserializationError
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.serde import AvroDeserializer, EventSchemas, WriterSchema, event_schemas
from jobstream._pipeline.serde.schemas import DEFAULT_SCHEMAS_DIR

SCHEMAS = event_schemas()
DESERIALIZER = AvroDeserializer()
RECORDS_PER_SCHEMA = 30

# Pinned when a version is released; a released file must never change afterwards.
RELEASED_FINGERPRINTS: dict[str, dict[str, str]] = {
    "v1": {
        "JobSubmitted": "f41bcd4b9ec94d0b",
        "JobCancelled": "b91fadc2fc21be70",
        "ScheduleChanged": "f13033290cc9b1b6",
        "ExecutionRequested": "fe37b822602fecc4",
        "JobLifecycle": "1aa5f0a24f78cfa0",
        "RetryScheduled": "abaa9e93a7ae3935",
        "DeadLettered": "7883bf8cc9cd843a",
        "WorkerHeartbeat": "14eaf4a8b4202919",
    },
    "v2": {
        "JobSubmitted": "21f06b3bc07bf5d8",
        "JobCancelled": "366df35a9bca369f",
        "ScheduleChanged": "4fdccd629f53f778",
        "ExecutionRequested": "dfd250940a112047",
        "JobLifecycle": "dc6fef8b237d6672",
        "RetryScheduled": "0de57b43eba5eafe",
        "DeadLettered": "cd65031b2df149ea",
        "WorkerHeartbeat": "130e630eb5fb4b3f",
        "WorkflowSubmitted": "dce88b7d58fa9e11",
        "WorkflowCancelled": "8ef8c301f02b507d",
        "StepEnded": "e48186f9c44f8356",
        "JobTriggered": "6409df3ba8a72379",
        "CancelRequested": "5990115de09d3164",
    },
}


def single_object(writer: WriterSchema, record: dict[str, Any]) -> bytes:
    """Encode as that writer version did, independently of today's serializer."""
    buf = io.BytesIO()
    buf.write(b"\xc3\x01" + writer.fingerprint)
    schemaless_writer(buf, writer.parsed, record)
    return buf.getvalue()


RELEASED = [
    pytest.param(writer, id=f"{version}-{name}")
    for version in SCHEMAS.versions
    for name, writer in SCHEMAS.released(version).items()
]


def test_at_least_one_version_is_released() -> None:
    assert SCHEMAS.versions, "schemas/released/ has no version: the evolution tests test nothing"


@pytest.mark.parametrize("writer", RELEASED)
def test_old_writer_records_decode_with_current_reader(writer: WriterSchema) -> None:
    current = SCHEMAS.current(writer.name)
    old_fields = {f["name"]: f["type"] for f in writer.parsed["fields"]}
    for record in generate_many(writer.parsed, RECORDS_PER_SCHEMA):
        event = DESERIALIZER(single_object(writer, record))
        data = plain(event.data)

        assert event.name == writer.name
        assert validate(data, current.parsed, raise_errors=True)
        for field in current.parsed["fields"]:
            name = field["name"]
            if name not in old_fields:
                assert data[name] == field["default"], f"{name}: new field needs a default"
            elif old_fields[name] == field["type"]:
                assert data[name] == record[name]


def test_released_versions_are_pinned_and_unchanged() -> None:
    assert set(SCHEMAS.versions) == set(RELEASED_FINGERPRINTS), (
        "a released version was added or removed: pin its fingerprints in this file"
    )
    for version, pinned in RELEASED_FINGERPRINTS.items():
        actual = {name: w.fingerprint.hex() for name, w in SCHEMAS.released(version).items()}
        assert actual == pinned, f"schemas/released/{version} changed; released files are frozen"


@pytest.mark.parametrize("version", SCHEMAS.versions)
def test_nothing_released_is_gone_from_the_current_schemas(version: str) -> None:
    """Events and shared types are never removed or renamed, only added."""
    released = {p.name for p in (DEFAULT_SCHEMAS_DIR / "released" / version).glob("*.avsc")}
    current = {p.name for p in DEFAULT_SCHEMAS_DIR.glob("*.avsc")}
    assert released - current == set()
    assert {f"io.jobstream.{name}.avsc" for name in SCHEMAS.released(version)} <= released


# --- The mechanism itself, on schemas made up for the test ----------------------


def make_schemas_dir(tmp_path: Path, change: dict[str, Any] | None) -> Path:
    """Copy today's schemas; release them as v0 after dropping JobCancelled.reason.

    ``change`` replaces the current JobCancelled.reason field (None: leave it).
    """
    root = tmp_path / "schemas"
    shutil.copytree(DEFAULT_SCHEMAS_DIR, root, ignore=shutil.ignore_patterns("released"))
    released = root / "released" / "v0"
    shutil.copytree(root, released, ignore=shutil.ignore_patterns("released"))

    path = released / "io.jobstream.JobCancelled.avsc"
    old = json.loads(path.read_text())
    old["fields"] = [f for f in old["fields"] if f["name"] != "reason"]
    path.write_text(json.dumps(old))

    if change is not None:
        path = root / "io.jobstream.JobCancelled.avsc"
        new = json.loads(path.read_text())
        new["fields"] = [f if f["name"] != "reason" else change for f in new["fields"]]
        path.write_text(json.dumps(new))
    return root


def test_field_added_with_default_reads_old_records(tmp_path: Path) -> None:
    schemas = EventSchemas(make_schemas_dir(tmp_path, None))
    old = schemas.released("v0")["JobCancelled"]
    assert old.fingerprint != schemas.current("JobCancelled").fingerprint

    event = AvroDeserializer(schemas=schemas)(
        single_object(old, {"job_id": "j", "workflow_id": None, "requested_at_ms": 3})
    )
    assert plain(event.data) == {"job_id": "j", "workflow_id": None, "requested_at_ms": 3,
                                 "reason": None, "requested_by": None}  # fmt: skip


def test_field_added_without_default_is_caught(tmp_path: Path) -> None:
    """What the released-version test would report if someone broke rule 1."""
    no_default = {"name": "reason", "type": "string"}
    schemas = EventSchemas(make_schemas_dir(tmp_path, no_default))
    old = schemas.released("v0")["JobCancelled"]

    with pytest.raises(DeserializationError, match="JobCancelled@v0 cannot be read as the current"):
        AvroDeserializer(schemas=schemas)(
            single_object(old, {"job_id": "j", "workflow_id": None, "requested_at_ms": 3})
        )


def test_released_versions_sort_numerically(tmp_path: Path) -> None:
    root = make_schemas_dir(tmp_path, None)
    for version in ("v10", "v2"):
        shutil.copytree(root / "released" / "v0", root / "released" / version)
    assert EventSchemas(root).versions == ("v0", "v2", "v10")


def test_missing_schemas_dir_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="schemas directory not found"):
        EventSchemas(tmp_path / "nowhere")


def test_missing_event_schema_is_a_configuration_error(tmp_path: Path) -> None:
    root = make_schemas_dir(tmp_path, None)
    (root / "io.jobstream.WorkerHeartbeat.avsc").unlink()
    with pytest.raises(ConfigurationError, match="WorkerHeartbeat"):
        EventSchemas(root)


def test_schemas_are_loaded_once_per_directory() -> None:
    assert event_schemas() is event_schemas(DEFAULT_SCHEMAS_DIR)
