"""A record's headers, read one way everywhere.

confluent-kafka hands a consumed record's headers as a list of (name, value) pairs, a
value None when a producer set the name alone, and None for a record with no headers; a
header written by this process may still be text, and some callers hold a mapping. A
name is matched without regard to case (as HTTP's are, which ``content-type`` comes from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

HeaderValue = str | bytes | None
Headers = Mapping[str, HeaderValue] | Sequence[tuple[str, HeaderValue]] | None
"""A record's headers as confluent-kafka hands or takes them."""


def header_pairs(record: object) -> list[tuple[str, bytes]]:
    """``record``'s headers as (name, bytes) pairs, ready to produce again (a value-less
    header as b""); [] when it has none, or is of a kind that carries none (a test's
    plain record)."""
    read = getattr(record, "headers", None)
    found = read() if callable(read) else None
    return [(name, value or b"") for name, value in found or ()]


def header_bytes(headers: Headers, name: str) -> bytes | None:
    """The first value of header ``name`` (lower case) as bytes; None when absent or
    value-less."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    for key, value in pairs:
        if key.lower() == name and value is not None:
            return value if isinstance(value, bytes) else value.encode()
    return None


def header(headers: Headers, name: str) -> str | None:
    """The first value of header ``name`` (lower case) as text; None when absent or
    value-less."""
    value = header_bytes(headers, name)
    return None if value is None else value.decode(errors="replace")
