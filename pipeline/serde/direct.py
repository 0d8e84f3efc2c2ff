"""Avro binary straight to and from the typed records, one codec made per schema.

cavro and fastavro write and read dicts: a typed record went through ``plain`` (a dict
of it) and cavro's writer, 22 µs for a STARTED that this writes in 6, and came back
through cavro's reader and ``typed``, 11 µs against 9 here. Profiles put a tenth to a
fifth of each process's CPU there (docs/benchmarks.md, "Codecs"). The schemas
are ours and use few shapes (records, enums, arrays, maps, strings, bytes, numbers and
``["null", X]`` unions), so each record's codec is written out as Python source once, at
start, from its current schema: a write is one function of straight-line appends, a
read one of straight-line slices that builds the record type directly.

They are the fast path of :mod:`jobstream._pipeline.serde.avro` only, which keeps cavro and fastavro
for everything else (dicts, ``validate=True``, older writers, a registry) and for the
error message: a value these codecs cannot write, or bytes they cannot read, raise, and
the serde then asks fastavro what is wrong. tests/pipeline/serde/test_direct.py holds
their bytes equal to fastavro's for every record type.
"""

from __future__ import annotations

import functools
import struct
import typing
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Any

from jobstream._pipeline.avro_bounds import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from jobstream._pipeline.model.records import RECORD_TYPES, Record

Writer = Callable[[Record, bytearray], None]
Reader = Callable[[bytes, int], tuple[Record, int]]

_DOUBLE = struct.Struct("<d")




def write_long(out: bytearray, n: int) -> None:
    """Avro's long: zig-zag, then base-128 little-endian groups."""
    if not LONG_MIN <= n <= LONG_MAX:
        raise OverflowError(f"{n} is out of a long's range")
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def write_int(out: bytearray, n: int) -> None:
    """Avro's int: a long of 32 bits."""
    if not INT_MIN <= n <= INT_MAX:
        raise OverflowError(f"{n} is out of an int's range")
    write_long(out, n)


def read_long(b: bytes, p: int) -> tuple[int, int]:
    """The long at ``p`` and the position after it."""
    shift = n = 0
    while True:
        c = b[p]
        p += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return (n >> 1) ^ -(n & 1), p
        shift += 7
        if shift == 63 and b[p] > 1:
            raise ValueError("varint beyond 64 bits")


def _long_bytes(n: int) -> bytes:
    out = bytearray()
    write_long(out, n)
    return bytes(out)


class _Source:
    """Python source of the codecs, with the names it refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"write_long": write_long, "write_int": write_int,
                                      "read_long": read_long,
                                      "pack_double": _DOUBLE.pack,
                                      "unpack_double": _DOUBLE.unpack_from}  # fmt: skip
        self._temps = 0

    def temp(self) -> str:
        self._temps += 1
        return f"v{self._temps}"

    def name(self, prefix: str, value: Any) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name


def _named(schema: Any, types: dict[str, Any]) -> Any:
    """The schema itself for a reference by name (fastavro parses a named type once)."""
    if isinstance(schema, str) and schema in types:
        return types[schema]
    if isinstance(schema, dict) and schema.get("type") in ("record", "enum"):
        types[schema["name"]] = schema
    return schema


def _shape(schema: Any, types: dict[str, Any]) -> tuple[Any, str]:
    """The schema (a named one resolved) and its kind: an Avro type's name, or
    ``optional`` for a ``["null", X]`` union, the only union the codecs write."""
    schema = _named(schema, types)
    if isinstance(schema, list):
        if len(schema) != 2 or schema[0] != "null":
            raise NotImplementedError(f"union {schema}")
        return schema, "optional"
    if isinstance(schema, dict) and "logicalType" in schema:
        raise NotImplementedError(f"logical type {schema['logicalType']}")
    return schema, schema if isinstance(schema, str) else schema["type"]


def _write(src: _Source, schema: Any, value: str, indent: str, types: dict[str, Any],
           records: dict[str, str]) -> None:  # fmt: skip
    """Append to ``src.lines`` the statements that write ``value`` (an expression)."""
    schema, kind = _shape(schema, types)
    emit = src.lines.append
    if kind == "optional":
        v = src.temp()
        emit(f"{indent}{v} = {value}")
        emit(f"{indent}if {v} is None:")
        emit(f"{indent}    out.append(0)")
        emit(f"{indent}else:")
        emit(f"{indent}    out.append(2)")
        _write(src, schema[1], v, indent + "    ", types, records)
        return
    if kind in ("long", "int"):
        emit(f"{indent}write_{kind}(out, {value})")
    elif kind == "string":
        v = src.temp()
        emit(f"{indent}{v} = {value}.encode()")
        emit(f"{indent}write_long(out, len({v}))")
        emit(f"{indent}out += {v}")
    elif kind == "bytes":
        v = src.temp()
        emit(f"{indent}{v} = {value}")
        emit(f"{indent}write_long(out, len({v}))")
        emit(f"{indent}out += {v}")
    elif kind == "boolean":
        emit(f"{indent}out.append(1 if {value} else 0)")
    elif kind == "double":
        emit(f"{indent}out += pack_double({value})")
    elif kind == "null":
        emit(f"{indent}if {value} is not None: raise TypeError('null expected')")
    elif kind == "enum":
        index = src.name("symbols", {symbol: _long_bytes(i)
                                     for i, symbol in enumerate(schema["symbols"])})  # fmt: skip
        emit(f"{indent}out += {index}[{value}]")
    elif kind in ("array", "map"):  # one block of every item, then the empty block
        v, item = src.temp(), src.temp()
        emit(f"{indent}{v} = {value}")
        emit(f"{indent}if len({v}):")  # len(): None is refused, not written as empty
        emit(f"{indent}    write_long(out, len({v}))")
        if kind == "array":
            emit(f"{indent}    for {item} in {v}:")
        else:
            key = src.temp()
            emit(f"{indent}    for {key}, {item} in {v}.items():")
            _write(src, "string", key, indent + "        ", types, records)
        _write(src, _items(schema), item, indent + "        ", types, records)
        emit(f"{indent}out.append(0)")
    elif kind == "record":
        emit(f"{indent}{records[schema['name']]}_write({value}, out)")
    else:
        raise NotImplementedError(f"Avro type {kind}")


def _read(src: _Source, schema: Any, target: str, indent: str, types: dict[str, Any],
          records: dict[str, str]) -> None:  # fmt: skip
    """Append the statements that read one value at ``p`` of ``b`` into ``target``."""
    schema, kind = _shape(schema, types)
    emit = src.lines.append
    if kind == "optional":
        emit(f"{indent}c = b[p]")
        emit(f"{indent}p += 1")
        emit(f"{indent}if c == 0:")
        emit(f"{indent}    {target} = None")
        emit(f"{indent}elif c == 2:")
        _read(src, schema[1], target, indent + "    ", types, records)
        emit(f"{indent}else:")
        emit(f"{indent}    raise ValueError('union index')")
        return
    if kind in ("long", "int"):
        emit(f"{indent}c = b[p]")
        emit(f"{indent}if c < 128:")
        emit(f"{indent}    {target} = (c >> 1) ^ -(c & 1)")
        emit(f"{indent}    p += 1")
        emit(f"{indent}else:")
        emit(f"{indent}    {target}, p = read_long(b, p)")
    elif kind == "string":
        _read(src, "long", "n", indent, types, records)
        emit(f"{indent}if n < 0 or p + n > len(b): raise ValueError('string length')")
        emit(f"{indent}{target} = b[p:p + n].decode()")
        emit(f"{indent}p += n")
    elif kind == "bytes":
        _read(src, "long", "n", indent, types, records)
        emit(f"{indent}if n < 0 or p + n > len(b): raise ValueError('bytes length')")
        emit(f"{indent}{target} = bytes(b[p:p + n])")
        emit(f"{indent}p += n")
    elif kind == "boolean":
        emit(f"{indent}c = b[p]")
        emit(f"{indent}p += 1")
        emit(f"{indent}if c > 1: raise ValueError('boolean')")
        emit(f"{indent}{target} = c == 1")
    elif kind == "double":
        emit(f"{indent}{target}, = unpack_double(b, p)")
        emit(f"{indent}p += 8")
    elif kind == "null":
        emit(f"{indent}{target} = None")
    elif kind == "enum":
        symbols = src.name("members", _members(schema))
        _read(src, "long", "n", indent, types, records)
        emit(f"{indent}if n < 0: raise ValueError('enum index')")
        emit(f"{indent}{target} = {symbols}[n]")
    elif kind in ("array", "map"):  # blocks of items until an empty one
        items, count, item = src.temp(), src.temp(), src.temp()
        emit(f"{indent}{items} = {'[]' if kind == 'array' else '{}'}")
        _read(src, "long", count, indent, types, records)
        emit(f"{indent}while {count}:")
        emit(f"{indent}    if {count} < 0: raise ValueError('{kind} block with a size')")
        emit(f"{indent}    for _ in range({count}):")
        if kind == "array":
            _read(src, _items(schema), item, indent + "        ", types, records)
            emit(f"{indent}        {items}.append({item})")
        else:
            key = src.temp()
            _read(src, "string", key, indent + "        ", types, records)
            _read(src, _items(schema), item, indent + "        ", types, records)
            emit(f"{indent}        {items}[{key}] = {item}")
        _read(src, "long", count, indent + "    ", types, records)
        emit(f"{indent}{target} = {items}")
    elif kind == "record":
        emit(f"{indent}{target}, p = {records[schema['name']]}_read(b, p)")
    else:
        raise NotImplementedError(f"Avro type {kind}")


def _items(schema: dict[str, Any]) -> Any:
    """The schema of an array's items or of a map's values."""
    return schema["items"] if schema["type"] == "array" else schema["values"]


def _members(schema: dict[str, Any]) -> tuple[StrEnum, ...]:
    """An enum's symbols as the records hold them: members of the StrEnum of its name."""
    name = _short(schema["name"])
    kind = _enum_types().get(name)
    if kind is None:
        raise TypeError(f"no record field has the enum type {name}")
    return tuple(kind(symbol) for symbol in schema["symbols"])


@functools.cache
def _enum_types() -> dict[str, type[StrEnum]]:
    """The StrEnums the record types' fields hold, by name (the Avro enum's name)."""
    found: dict[str, type[StrEnum]] = {}
    for kind in RECORD_TYPES.values():
        for hint in typing.get_type_hints(kind).values():
            for option in (hint, *typing.get_args(hint)):
                if isinstance(option, type) and issubclass(option, StrEnum):
                    found[option.__name__] = option
    return found


def _records(schema: Any, types: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every record schema within ``schema``, nested ones first."""
    schema = _named(schema, types)
    if isinstance(schema, list):
        for branch in schema:
            yield from _records(branch, types)
    elif isinstance(schema, dict):
        if schema["type"] == "record":
            for field in schema["fields"]:
                yield from _records(field["type"], types)
            yield schema
        elif schema["type"] in ("array", "map"):
            yield from _records(_items(schema), types)


def _short(full_name: str) -> str:
    return full_name.rpartition(".")[2]


def codecs(parsed: dict[str, Any]) -> tuple[Writer, Reader]:
    """The writer and the reader of one event's current schema (fastavro's parsed form)."""
    src = _Source()
    types: dict[str, Any] = {}
    records: dict[str, str] = {}
    for record in _records(parsed, types):
        name = record["name"]
        if name in records:
            continue
        prefix = records[name] = f"r_{_short(name)}"
        kind = RECORD_TYPES[_short(name)]
        src.names[f"{prefix}_type"] = kind
        fields = record["fields"]
        if tuple(f["name"] for f in fields) != kind.__struct_fields__:
            raise TypeError(f"{kind.__name__}'s fields differ from {name}'s")
        src.lines.append(f"def {prefix}_write(r, out):")
        for field in fields:
            _write(src, field["type"], f"r.{field['name']}", "    ", types, records)
        src.lines.append(f"def {prefix}_read(b, p):")
        for i, field in enumerate(fields):
            _read(src, field["type"], f"f{i}", "    ", types, records)
        arguments = ", ".join(f"{f['name']}=f{i}" for i, f in enumerate(fields))
        src.lines.append(f"    return {prefix}_type({arguments}), p")
    namespace = dict(src.names)
    exec(compile("\n".join(src.lines), f"<avro codec {parsed['name']}>", "exec"), namespace)
    top = records[parsed["name"]]
    return namespace[f"{top}_write"], namespace[f"{top}_read"]
