"""A record's headers read one way: a named header as text or bytes, every header as pairs
to produce again."""

from __future__ import annotations

from jobstream._pipeline.kafka.headers import header, header_bytes, header_pairs
from jobstream._pipeline.runtime.driver import DriverRecord
from jobstream._pipeline.worker.memory import MemoryMessage


def test_a_header_is_found_by_its_name_in_any_case_and_any_shape() -> None:
    pairs = [("execution-id", b"01J:1:1"), ("flag", None), ("text", "plain")]
    assert header(pairs, "execution-id") == "01J:1:1"
    assert header_bytes(pairs, "execution-id") == b"01J:1:1"
    assert header(pairs, "text") == "plain" and header_bytes(pairs, "text") == b"plain"
    assert header({"Content-Type": b"text/plain"}, "content-type") == "text/plain"
    assert header(pairs, "flag") is None  # value-less: nothing to read
    assert header(pairs, "absent") is None
    assert header(None, "content-type") is None
    assert header([("a", b"\xff")], "a") == "\ufffd"


def test_every_header_passes_on_as_bytes_and_a_record_without_any_has_none() -> None:
    message = MemoryMessage("t", 0, 0, b"k", b"v", [("a", b"1"), ("b", None)])  # type: ignore[list-item]
    assert header_pairs(message) == [("a", b"1"), ("b", b"")]
    assert header_pairs(MemoryMessage("t", 0, 0, b"k", b"v")) == []
    assert header_pairs(DriverRecord("t", 0, 0, b"k", b"v")) == []
