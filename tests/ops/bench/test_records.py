"""The typed-record micro-benchmark converts what the engine decodes: every way gives each
hot record back as it was, typed all the way down (nested records, enums, arrays)."""

from __future__ import annotations

import enum

import orjson

from jobstream._ops.bench.codecs import hot_events
from jobstream._ops.bench.records import decoded, measure, ways


def test_every_way_types_each_record_and_gives_it_back() -> None:
    for label, event in hot_events().items():
        schema, record = decoded(event)
        for name, way in ways(schema).items():
            typed = way.to_typed(record)
            assert not isinstance(typed, dict), (label, name)
            assert orjson.dumps(way.to_dict(typed)) == orjson.dumps(record), (label, name)


def test_nested_records_and_enums_are_typed() -> None:
    schema, record = decoded(hot_events()["ExecutionRequested"])
    for name, way in ways(schema).items():
        typed = way.to_typed(record)
        assert not isinstance(typed.spec, dict), name
        assert isinstance(typed.spec.priority, enum.Enum), name
        assert typed.spec.priority == record["spec"]["priority"], name


def test_measure_reports_every_way() -> None:
    schema, record = decoded(hot_events()["FIRED"])
    found = measure("FIRED", schema, record, number=5, repeat=1)
    assert set(found) == {"dict", *ways(schema)}
    assert all(costs["bytes"] > 0 for costs in found.values())
