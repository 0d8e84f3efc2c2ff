"""Hypothesis strategies for the events of schemas/: any valid record of their current schemas."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from jobstream._pipeline.serde import EVENT_NAMES, Event, event_schemas

PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=20),
}


def strategy_for(schema: Any, named: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values for a parsed fastavro schema (the subset our schemas use)."""
    if isinstance(schema, str):
        return PRIMITIVES[schema] if schema in PRIMITIVES else strategy_for(named[schema], named)
    if isinstance(schema, list):
        return st.one_of([strategy_for(branch, named) for branch in schema])
    kind = schema["type"]
    if kind == "record":
        fields = {f["name"]: strategy_for(f["type"], named) for f in schema["fields"]}
        return st.fixed_dictionaries(fields)
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "array":
        return st.lists(strategy_for(schema["items"], named), max_size=3)
    if kind == "map":
        return st.dictionaries(
            st.text(max_size=8), strategy_for(schema["values"], named), max_size=3
        )
    return strategy_for(kind, named)


def event_strategy(name: str) -> st.SearchStrategy[Event]:
    parsed = event_schemas().current(name).parsed
    return strategy_for(parsed, parsed["__named_schemas"]).map(lambda data: Event(name, data))


ANY_EVENT = st.one_of([event_strategy(name) for name in EVENT_NAMES])
"""Any event, its record as a dict of builtins (what fastavro writes and reads)."""
