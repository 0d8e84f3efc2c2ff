"""What a rate limit is: whom it applies to, its rate and its burst, and its record on the
compacted jobs.limits topic (key: :attr:`LimitKey.id`; value: JSON; tombstone: cleared).

JSON rather than Avro, like jobs.status: an operator reads and writes limits with any
console tool, and a limit is a setting, not an event of a job's life.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.rules import field_check

_SEPARATOR = "\x00"
"""Between owner and type in a key id: owners may hold any printable character, no NUL."""
BURST_SECONDS = 0.5
"""The default burst: half a second's tokens (at least one). A bucket holds no more than
its burst, so tokens earned while one firing transaction commits beyond that are lost: the
burst must cover the timers' loop period under load (20 ms idle, 100-500 ms measured on
a loaded 2-core machine), or a limit fires below its rate (docs/limits.md)."""


@dataclass(frozen=True, slots=True)
class LimitKey:
    """Whom a limit applies to: a job type, an owner, or one owner's jobs of one type."""

    owner: str | None = None
    job_type: str | None = None

    def __post_init__(self) -> None:
        if self.owner is None and self.job_type is None:
            raise ValidationError("limit", "needs a job type, an owner or both")
        if self.owner is not None:
            field_check("owner", rules.owner, self.owner)
        if self.job_type is not None:
            field_check("job_type", rules.job_type, self.job_type)

    @property
    def id(self) -> str:
        """The record key on jobs.limits, and the name of the bucket's queue of held jobs."""
        return f"{self.owner or ''}{_SEPARATOR}{self.job_type or ''}"

    @classmethod
    def from_id(cls, key_id: str) -> LimitKey:
        owner, separator, job_type = key_id.partition(_SEPARATOR)
        if not separator:
            raise ValidationError("key", f"not a limit key: {key_id!r}")
        return cls(owner=owner or None, job_type=job_type or None)

    def __str__(self) -> str:
        parts = [f"owner={self.owner}"] if self.owner is not None else []
        if self.job_type is not None:
            parts.append(f"type={self.job_type}")
        return ",".join(parts)


def keys_of(owner: str, job_type: str) -> tuple[LimitKey, LimitKey, LimitKey]:
    """The three limits that may apply to a job: its type's, its owner's, and the pair's."""
    return (LimitKey(job_type=job_type), LimitKey(owner=owner),
            LimitKey(owner=owner, job_type=job_type))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Limit:
    key: LimitKey
    rate: float
    """Firings per second, across every timer process."""
    burst: int
    """Firings that may go out at once after a quiet spell (the bucket's capacity)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise ValidationError("rate", f"must be a positive number per second, got {self.rate}")
        if self.burst < 1:
            raise ValidationError("burst", f"must be at least 1, got {self.burst}")

    @classmethod
    def of(cls, key: LimitKey, rate: float, burst: int | None = None) -> Limit:
        """A limit with the default burst (half a second's firings) unless given."""
        return cls(key, rate, default_burst(rate) if burst is None else burst)

    def encode(self) -> bytes:
        return orjson.dumps({"owner": self.key.owner, "job_type": self.key.job_type,
                             "rate": self.rate, "burst": self.burst})  # fmt: skip

    @classmethod
    def decode(cls, raw: bytes) -> Limit:
        """A jobs.limits value; ValidationError naming what is wrong."""
        try:
            data: dict[str, Any] = orjson.loads(raw)
            key = LimitKey(owner=data.get("owner"), job_type=data.get("job_type"))
            return cls(key, float(data["rate"]), int(data["burst"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValidationError("limit", f"not a limit record: {exc!r}") from None


def default_burst(rate: float) -> int:
    return max(1, math.ceil(rate * BURST_SECONDS))


def parse_rate(text: str) -> float:
    """``50/s``, ``300/m`` or ``1000/h`` as firings per second (:func:`rules.rate_per_second`);
    ValidationError naming ``rate`` otherwise."""
    return field_check("rate", rules.rate_per_second, text)
