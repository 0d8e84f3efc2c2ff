"""A source record as confluent-kafka's Message shows it, for tests with no broker."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson


@dataclass
class FakeRecord:
    value_: bytes | None
    key_: bytes | None = None
    headers_: list[tuple[str, bytes | None]] = field(default_factory=list)
    topic_: str = "orders"
    partition_: int = 0
    offset_: int = 0

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def headers(self) -> list[tuple[str, bytes | None]]:
        return self.headers_

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000)


def json_record(value: object, **fields: object) -> FakeRecord:
    return FakeRecord(orjson.dumps(value), **fields)  # type: ignore[arg-type]
