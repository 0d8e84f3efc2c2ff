"""The lifecycle vocabulary agrees with the wire: the Avro enum, fastavro, the epoch's default."""

from __future__ import annotations

import pytest

from jobstream._pipeline.model.lifecycle import JobState, LifecycleKind
from jobstream._pipeline.serde import Event, event_schemas, make_serde

SERIALIZE, DESERIALIZE = make_serde()


def test_kinds_are_the_avro_symbols_in_their_order() -> None:
    kind = event_schemas().current("JobLifecycle").parsed["fields"][0]
    assert kind["name"] == "kind"
    assert tuple(LifecycleKind) == tuple(kind["type"]["symbols"])


@pytest.mark.parametrize("member", [*LifecycleKind, *JobState])
def test_a_member_is_its_name_so_it_equals_and_hashes_like_the_wire_string(member: str) -> None:
    text = str(member.value)
    assert member == text and hash(member) == hash(text)
    assert {text: True}[member] and {member: True}[text]


@pytest.mark.parametrize("kind", LifecycleKind)
def test_fastavro_writes_a_member_as_its_symbol(kind: LifecycleKind) -> None:
    as_member = SERIALIZE(Event("JobLifecycle", {"kind": kind, "job_id": "j", "at_ms": 1}))
    as_text = SERIALIZE(Event("JobLifecycle", {"kind": kind.value, "job_id": "j", "at_ms": 1}))
    assert as_member == as_text
    assert DESERIALIZE(as_member).data["kind"] == kind
