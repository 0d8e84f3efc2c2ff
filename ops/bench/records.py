"""Micro-benchmark of typed records against the dicts the engine passes today.

``python -m jobstream._ops.bench.records`` takes the records one no-op job produces
(ops/bench/codecs.py, ``hot_events``), as fastavro decodes them (dicts), and times turning
each into a typed record and back, several ways, with one type per Avro record (nested
records typed too) and one enum per Avro enum:

- ``dataclass``: ``@dataclass(frozen=True, slots=True)``, built by a converter per type;
- ``NamedTuple``: the same with ``typing.NamedTuple`` classes;
- ``msgspec``: frozen ``msgspec.Struct`` types, converted by ``msgspec.convert`` and back
  by ``msgspec.to_builtins`` (when msgspec is installed: the ``dev`` extra).

Per record and way: ``to typed`` (the dict into its type: the added cost of decoding into
a type), ``to dict`` (back, for the encoder), ``read 3`` (three fields read, against three
dict lookups) and the bytes one record holds beside the strings it shares with the decoded
dict (tracemalloc over many; for ``dict``, the dicts and lists of a copy). Times are CPU
seconds (``time.process_time``), the best of ``--repeat`` rounds of ``--number`` records,
in µs per record. docs/benchmarks.md, "Typed records", records a run.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import io
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import typer
from fastavro import schemaless_reader
from fastavro.schema import expand_schema
from rich.table import Table

from jobstream._ops.bench.codecs import hot_events, per_record_us
from jobstream._ops.bench.report import console, load_average, write_results
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.serde.avro import SINGLE_OBJECT_HEADER_SIZE
from jobstream._pipeline.serde.schemas import event_schemas

Convert = Callable[[Any], Any]
MakeRecord = Callable[[str, list[str]], Any]


class Way(NamedTuple):
    to_typed: Convert
    to_dict: Convert


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _dataclass(name: str, fields: list[str]) -> Any:
    return dataclasses.make_dataclass(name, [(f, Any) for f in fields], frozen=True, slots=True)


def _named_tuple(name: str, fields: list[str]) -> Any:
    return NamedTuple(name, [(f, Any) for f in fields])


def _enum_type(schema: dict[str, Any]) -> type[enum.StrEnum]:
    return enum.StrEnum(_short(schema["name"]), {s: s for s in schema["symbols"]})  # type: ignore[return-value]


def _enum(schema: dict[str, Any]) -> Convert:
    return _enum_type(schema)._value2member_map_.__getitem__


def plan(schema: Any, make_record: MakeRecord) -> tuple[Convert | None, Convert | None]:
    """(to typed, to dict) of one Avro type; None where the value passes as it is."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            return None, None  # a union of several types stays as fastavro gives it
        into, back = plan(branches[0], make_record)
        if into is None or back is None:
            return into, back
        return ((lambda v: None if v is None else into(v)),
                (lambda v: None if v is None else back(v)))  # fmt: skip
    if not isinstance(schema, dict):
        return None, None
    kind = schema["type"]
    if kind == "enum":
        return _enum(schema), str
    if kind == "array":
        into, back = plan(schema["items"], make_record)
        if into is None or back is None:
            return tuple, list
        return (lambda v: tuple(into(x) for x in v)), (lambda v: [back(x) for x in v])
    if kind == "map":
        into, back = plan(schema["values"], make_record)
        if into is None or back is None:
            return None, None
        return ((lambda v: {k: into(x) for k, x in v.items()}),
                (lambda v: {k: back(x) for k, x in v.items()}))  # fmt: skip
    if kind != "record":
        return plan(kind, make_record)
    names = [f["name"] for f in schema["fields"]]
    plans = [plan(f["type"], make_record) for f in schema["fields"]]
    cls = make_record(_short(schema["name"]), names)
    pairs = list(zip(names, plans, strict=True))

    def to_typed(value: dict[str, Any]) -> Any:
        return cls(*[into(value[n]) if into else value[n] for n, (into, _) in pairs])

    def to_dict(record: Any) -> dict[str, Any]:
        return {n: back(getattr(record, n)) if back else getattr(record, n)
                for n, (_, back) in pairs}  # fmt: skip

    return to_typed, to_dict


def msgspec_type(schema: Any) -> Any:
    """The msgspec annotation of one Avro type."""
    import msgspec

    primitives = {"string": str, "long": int, "int": int, "boolean": bool, "double": float,
                  "float": float, "bytes": bytes, "null": type(None)}  # fmt: skip
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            return Any
        return msgspec_type(branches[0]) | None if "null" in schema else msgspec_type(branches[0])
    if isinstance(schema, str):
        return primitives.get(schema, Any)
    kind = schema["type"]
    if kind == "enum":
        return _enum_type(schema)
    if kind == "array":
        return tuple[msgspec_type(schema["items"]), ...]  # type: ignore[misc]
    if kind == "map":
        return dict[str, msgspec_type(schema["values"])]  # type: ignore[misc]
    if kind != "record":
        return msgspec_type(kind)
    fields = [(f["name"], msgspec_type(f["type"])) for f in schema["fields"]]
    return msgspec.defstruct(_short(schema["name"]), fields, frozen=True)


def ways(schema: dict[str, Any]) -> dict[str, Way]:
    """Name -> the conversions of records of ``schema`` (an expanded Avro record)."""
    found = {}
    for name, make in (("dataclass", _dataclass), ("NamedTuple", _named_tuple)):
        into, back = plan(schema, make)
        assert into is not None and back is not None
        found[name] = Way(into, back)
    if importlib.util.find_spec("msgspec") is not None:
        import msgspec

        typed = msgspec_type(schema)
        found["msgspec"] = Way(lambda v: msgspec.convert(v, typed), msgspec.to_builtins)
    return found


def _copy(value: Any) -> Any:
    """``value``'s dicts and lists anew, its strings shared: what a typed record holds."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def bytes_per_record(build: Callable[[], object], count: int = 2000) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [build() for _ in range(count)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return round((after - before) / count)


def decoded(event: Event) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the expanded Avro schema of ``event``, the record as fastavro decodes it)."""
    serialize, _ = make_serde()
    current = event_schemas().current(event.name)
    body = serialize(event)[SINGLE_OBJECT_HEADER_SIZE:]
    record = schemaless_reader(io.BytesIO(body), current.parsed, None)
    return expand_schema(json.loads(current.to_json())), record  # type: ignore[return-value]


def measure(label: str, schema: dict[str, Any], record: dict[str, Any],
            number: int, repeat: int) -> dict[str, dict[str, float]]:  # fmt: skip
    """Way -> its costs on ``record``, the dict's own first."""
    names = [f["name"] for f in schema["fields"]][:3]
    found = {"dict": {
        "read3_us": per_record_us(lambda: [record[n] for n in names], number, repeat),
        "bytes": bytes_per_record(lambda: _copy(record)),
    }}  # fmt: skip
    for name, way in ways(schema).items():
        typed = way.to_typed(record)
        if orjson.dumps(way.to_dict(typed)) != orjson.dumps(record):  # tuples as lists
            raise RuntimeError(f"{name} does not give {label} back as it was")
        found[name] = _costs(way, typed, record, names, number, repeat)
    return found


def _costs(way: Way, typed: Any, record: dict[str, Any], names: list[str],
           number: int, repeat: int) -> dict[str, float]:  # fmt: skip
    return {
        "to_typed_us": per_record_us(lambda: way.to_typed(record), number, repeat),
        "to_dict_us": per_record_us(lambda: way.to_dict(typed), number, repeat),
        "read3_us": per_record_us(lambda: [getattr(typed, n) for n in names], number, repeat),
        "bytes": bytes_per_record(lambda: way.to_typed(record)),
    }


def main(
    number: int = typer.Option(3000, "--number", min=1, help="Records per round."),
    repeat: int = typer.Option(5, "--repeat", min=1, help="Rounds; the best one counts."),
    out: Path | None = typer.Option(None, "--out", help="Write the results here as JSON."),
) -> None:
    """Time typed records against dicts on the hot events, per record, several ways."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    report: dict[str, Any] = {"load_average_start": load_average()}
    for label, event in hot_events().items():
        schema, record = decoded(event)
        results[label] = measure(label, schema, record, number, repeat)
    report.update(results=results, load_average_end=load_average())
    table = Table(title="µs of CPU per record: to typed / to dict / read 3 fields; bytes held")
    table.add_column("event")
    for name in next(iter(results.values())):
        table.add_column(name, justify="right")
    for label, by_way in results.items():
        cells = [f"{c.get('to_typed_us', 0):.2f} / {c.get('to_dict_us', 0):.2f} / "
                 f"{c['read3_us']:.2f}; {c['bytes']} B" for c in by_way.values()]  # fmt: skip
        table.add_row(label, *cells)
    console.print(table)
    write_results(out, report)


if __name__ == "__main__":
    typer.run(main)
