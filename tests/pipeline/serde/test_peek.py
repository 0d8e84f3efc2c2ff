"""Reading a JobLifecycle's kind without decoding it agrees with decoding it."""

from __future__ import annotations

import pytest

from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.serde.peek import LIFECYCLE_KINDS, lifecycle_kind

SERIALIZE, DESERIALIZE = make_serde()


@pytest.mark.parametrize("kind", LIFECYCLE_KINDS)
def test_every_kind_reads_as_the_decoder_reads_it(kind: str) -> None:
    raw = SERIALIZE(Event("JobLifecycle", {"kind": kind, "job_id": "j", "at_ms": 1}))
    assert lifecycle_kind(raw) == DESERIALIZE(raw).data["kind"] == kind


def test_what_it_cannot_read_cheaply_is_none() -> None:
    cancel = SERIALIZE(Event("JobCancelled", {"job_id": "j", "requested_at_ms": 1}))
    lifecycle = SERIALIZE(Event("JobLifecycle", {"kind": "FIRED", "job_id": "j", "at_ms": 1}))
    assert lifecycle_kind(cancel) is None
    assert lifecycle_kind(None) is None and lifecycle_kind(b"") is None
    assert lifecycle_kind(b"\x00\x00\x00\x00\x01" + lifecycle[10:]) is None  # Confluent framing
    assert lifecycle_kind(lifecycle[:10]) is None  # no body
    assert lifecycle_kind(lifecycle[:10] + b"\xff") is None  # not a one-byte index
    assert lifecycle_kind(lifecycle[:10] + b"\x7e") is None  # index past the symbols
