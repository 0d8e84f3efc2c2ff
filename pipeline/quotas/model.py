"""What an owner's quotas are, and the arithmetic of refusing past them.

An owner's override is a record on the compacted jobs.quotas topic (key: the owner;
value: JSON of the quotas it sets; tombstone: back to the defaults). JSON rather than
Avro, like jobs.limits: an operator reads and writes it with any console tool.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import orjson

from jobstream._pipeline.errors import ValidationError

NAMES = ("job_types", "submit_rate", "submit_burst", "pending_jobs", "streams")
"""Every quota, as the API, the CLI and jobs.quotas name it."""


@dataclass(frozen=True, slots=True)
class Quota:
    """An owner's quotas; a field left None takes the default (:meth:`over`)."""

    job_types: int | None = None
    """Most job types the owner's jobs may have: a new type makes Kafka topics."""
    submit_rate: float | None = None
    """Jobs per second one token may submit for the owner."""
    submit_burst: int | None = None
    """Jobs one token may submit at once after a quiet spell."""
    pending_jobs: int | None = None
    """Most jobs of the owner that have not ended (any state but SUCCEEDED, DEAD_LETTERED,
    CANCELLED)."""
    streams: int | None = None
    """Most live streams (/api/v1/stream) one token may hold open."""

    def __post_init__(self) -> None:
        for name in ("job_types", "pending_jobs", "streams"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):  # fmt: skip
                raise ValidationError(name, f"must be a whole number, 0 or more; got {value!r}")
        rate = self.submit_rate
        if rate is not None and not (isinstance(rate, int | float) and math.isfinite(rate)
                                     and rate > 0):  # fmt: skip
            raise ValidationError("submit_rate", f"must be a positive number per second; "
                                                 f"got {rate!r}")  # fmt: skip
        burst = self.submit_burst
        if burst is not None and (isinstance(burst, bool) or not isinstance(burst, int)
                                  or burst < 1):  # fmt: skip
            raise ValidationError("submit_burst", f"must be a whole number, 1 or more; "
                                                  f"got {burst!r}")  # fmt: skip

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in NAMES)

    def over(self, base: Quota) -> Quota:
        """These quotas where set, ``base``'s elsewhere."""
        return replace(base, **{name: value for name, value in self.set_fields().items()})

    def set_fields(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}

    def encode(self) -> bytes:
        return orjson.dumps(self.set_fields())

    @classmethod
    def decode(cls, raw: bytes) -> Quota:
        """A jobs.quotas value; ValidationError naming what is wrong."""
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ValidationError("quota", f"not a quota record: {exc}") from None
        if not isinstance(data, dict):
            raise ValidationError("quota", "not a quota record: not a JSON object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValidationError(unknown[0], "is not a quota")
        return cls(**data)


def first_new_type_over(held: Collection[str], wanted: Iterable[str], limit: int) -> int | None:
    """The index in ``wanted`` of the first job type that is new beyond ``limit`` types
    (``held`` the owner has already); None when every one fits. The types a request
    brings count together: a batch of 30 new types against a quota of 20 with 0 held is
    refused at its 21st new type."""
    known = set(held)
    for index, job_type in enumerate(wanted):
        if job_type in known:
            continue
        if len(known) >= limit:
            return index
        known.add(job_type)
    return None
