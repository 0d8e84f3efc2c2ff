"""The benchmark reader tells a job's end from the record's first body byte."""

from __future__ import annotations

import pytest

from jobstream._ops.bench.events import ENDED, ends_a_job
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.serde.peek import LIFECYCLE_KINDS

SERIALIZE, _ = make_serde()


@pytest.mark.parametrize("kind", LIFECYCLE_KINDS)
def test_only_the_ending_kinds_end_a_job(kind: str) -> None:
    raw = SERIALIZE(Event("JobLifecycle", {"kind": kind, "job_id": "j1", "at_ms": 1}))
    assert ends_a_job(raw) is (kind in ENDED)


def test_other_events_and_garbage_do_not() -> None:
    cancel = SERIALIZE(Event("JobCancelled", {"job_id": "j1", "requested_at_ms": 1}))
    assert not ends_a_job(cancel)
    assert not ends_a_job(b"")
    assert not ends_a_job(b"\x00not avro at all")
