"""Each record type mirrors its Avro schema, and the serde converts at the edge only."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, get_args, get_origin, get_type_hints

import msgspec
import pytest

from jobstream._pipeline.model.lifecycle import LifecycleKind
from jobstream._pipeline.model.records import (
    RECORD_TYPES,
    ErrorInfo,
    Event,
    ExecutionRequested,
    JobLifecycle,
    JobSpec,
    Record,
    evolve,
    lifecycle,
    plain,
    typed,
)
from jobstream._pipeline.serde import EVENT_NAMES, event_schemas, make_serde

SERIALIZE, DESERIALIZE = make_serde()


def _named_records() -> dict[str, dict[str, Any]]:
    """Every record schema the events define, nested ones included, by short name."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                found.setdefault(node["name"].rsplit(".", 1)[-1], node)
                for field in node["fields"]:
                    walk(field["type"])
            elif node.get("type") in ("array", "map"):
                walk(node.get("items") or node.get("values"))

    for name in EVENT_NAMES:
        walk(event_schemas().current(name).parsed)
    return found


SCHEMAS = _named_records()


def test_every_record_of_the_schemas_has_a_type_and_every_type_a_record() -> None:
    assert set(RECORD_TYPES) == set(SCHEMAS)
    assert set(EVENT_NAMES) <= set(RECORD_TYPES)


def _enum_symbols(avro_type: Any) -> list[str] | None:
    branches = avro_type if isinstance(avro_type, list) else [avro_type]
    for branch in branches:
        if isinstance(branch, dict) and branch.get("type") == "enum":
            return list(branch["symbols"])
    return None


def _enum_of(hint: Any) -> type[StrEnum] | None:
    for candidate in (hint, *get_args(hint)):
        if isinstance(candidate, type) and issubclass(candidate, StrEnum):
            return candidate
    return None


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_type_has_its_records_fields_in_order_with_their_defaults(name: str) -> None:
    schema, kind = SCHEMAS[name], RECORD_TYPES[name]
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    assert [f.name for f in info.fields] == [f["name"] for f in schema["fields"]]
    hints = get_type_hints(kind)
    for field, avro in zip(info.fields, schema["fields"], strict=True):
        where = f"{name}.{field.name}"
        assert field.required == ("default" not in avro), where
        if "default" in avro:
            default = field.default if field.default is not msgspec.NODEFAULT else (
                field.default_factory())  # fmt: skip
            assert msgspec.to_builtins(default) == avro["default"], where
        nullable = isinstance(avro["type"], list) and "null" in avro["type"]
        assert nullable == (type(None) in get_args(hints[field.name])), where
        symbols = _enum_symbols(avro["type"])
        if symbols is not None:
            enum = _enum_of(hints[field.name])
            assert enum is not None and [m.value for m in enum] == symbols, where
        if get_origin(hints[field.name]) is list:
            assert isinstance(avro["type"], dict) and avro["type"]["type"] == "array", where


FULL_LIFECYCLE = {
    "kind": "FAILED", "job_id": "j", "at_ms": 5, "attempt": 2, "labels": {"team": "a"},
    "waiting_for": ["p"],
    "error": {"attempt": 2, "error_type": "Boom", "message": "m", "at_ms": 4},
    "progress": {"fraction": 0.5, "at_ms": 3},
    "execution": {
        "job_id": "j", "execution_id": "e", "scheduled_at_ms": 1, "fired_at_ms": 2,
        "spec": {"job_type": "t", "owner": "o", "priority": "HIGH",
                 "cron": {"expression": "* * * * *", "misfire": "SKIP"},
                 "retry": {"max_attempts": 4, "non_retryable_errors": ["X"]}},
        "parent_results": [{"job_id": "p", "outcome": "SUCCEEDED"}],
    },
}  # fmt: skip


def test_a_decoded_record_arrives_as_its_type_with_enums_and_nested_types() -> None:
    event = DESERIALIZE(SERIALIZE(Event("JobLifecycle", FULL_LIFECYCLE)))
    record = event.data
    assert isinstance(record, JobLifecycle) and record.kind == "FAILED"
    assert isinstance(record.error, ErrorInfo) and record.error.error_type == "Boom"
    assert isinstance(record.execution, ExecutionRequested)
    assert isinstance(record.execution.spec, JobSpec)
    assert record.execution.spec.priority is type(record.execution.spec.priority).HIGH
    assert record.execution.spec.cron is not None and record.execution.spec.cron.misfire == "SKIP"
    assert record.execution.parent_results[0].outcome == "SUCCEEDED"


def test_a_typed_record_is_written_as_the_same_bytes_as_its_dict() -> None:
    as_dict = SERIALIZE(Event("JobLifecycle", FULL_LIFECYCLE))
    as_type = SERIALIZE(Event("JobLifecycle", typed("JobLifecycle", FULL_LIFECYCLE)))
    assert as_type == as_dict
    assert DESERIALIZE(as_type).data == typed("JobLifecycle", FULL_LIFECYCLE)


def test_a_record_is_frozen_and_evolves_into_a_copy() -> None:
    spec = JobSpec(job_type="t", owner="o")
    with pytest.raises(AttributeError):
        spec.owner = "p"  # type: ignore[misc]
    moved = evolve(spec, pool="gpu")
    assert (moved.pool, spec.pool) == ("gpu", None)
    assert plain(moved)["pool"] == "gpu" and plain(moved)["priority"] == "NORMAL"


def test_a_record_reads_by_field_name_like_the_dict_it_was() -> None:
    record: Record = typed("JobSubmitted", {
        "job_id": "j", "submitted_at_ms": 1, "spec": {"job_type": "t", "owner": "o"}})  # fmt: skip
    assert record["job_id"] == "j" and record["spec"]["owner"] == "o"
    assert record.get("idempotency_key") is None and record.get("nothing", 7) == 7
    assert "spec" in record and "nothing" not in record
    with pytest.raises(KeyError):
        record["nothing"]
    assert dict(record)["submitted_at_ms"] == 1


def test_a_record_that_does_not_fit_its_type_is_refused_naming_the_field() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"spec.priority"):
        spec = {"job_type": "t", "owner": "o", "priority": "URGENT"}
        typed("JobSubmitted", {"job_id": "j", "submitted_at_ms": 1, "spec": spec})


def test_the_lifecycle_builder_takes_the_common_fields_from_what_it_is_about() -> None:
    execution = typed("ExecutionRequested", FULL_LIFECYCLE["execution"] | {"attempt": 3,
                      "epoch": 9, "workflow_id": "w"})  # fmt: skip
    assert isinstance(execution, ExecutionRequested)
    event = lifecycle(LifecycleKind.STARTED, execution, at_ms=7, worker_id="w1")
    assert (event.kind, event.job_id, event.workflow_id, event.at_ms) == ("STARTED", "j", "w", 7)
    assert (event.job_type, event.owner, event.attempt, event.epoch) == ("t", "o", 3, 9)
    assert (event.execution_id, event.worker_id) == ("e", "w1")

    class Known:
        job_id, workflow_id, job_type, owner = "k", None, "report", "acme"

    lost = lifecycle(LifecycleKind.LOST, Known(), at_ms=8, attempt=2)
    assert (lost.job_id, lost.job_type, lost.owner, lost.attempt, lost.execution_id) == (
        "k", "report", "acme", 2, None)
    assert Event.of(lost) == Event("JobLifecycle", lost)
