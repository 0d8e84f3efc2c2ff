"""Records a grow's handover produces, read back as the runner would read them."""

from __future__ import annotations

from dataclasses import dataclass

from jobstream._pipeline.runtime import Output


@dataclass
class Handed:
    """A record the runner would have produced and read back (headers included)."""

    out: Output
    at: int

    def topic(self) -> str:
        return self.out.topic

    def partition(self) -> int:
        assert self.out.partition is not None
        return self.out.partition

    def offset(self) -> int:
        return self.at

    def key(self) -> bytes | None:
        return self.out.key

    def value(self) -> bytes:
        value = self.out.value
        assert isinstance(value, bytes)
        return value

    def headers(self) -> list[tuple[str, bytes]]:
        return list(self.out.headers or ())
