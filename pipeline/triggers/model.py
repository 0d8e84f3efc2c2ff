"""What a trigger is: its source, its filter and its job, checked, and its JSON record on
the compacted jobs.triggers topic (key: :attr:`Trigger.id`; value: JSON; tombstone:
removed).

JSON like jobs.limits: an operator reads and writes triggers with any console tool. Every
rule raises ValidationError naming the field at fault (``source``, ``filter``,
``job.params.order``), so the CLI, the API and a skipped record all say the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.rules import field_check
from jobstream._pipeline.triggers.filter import Filter
from jobstream._pipeline.triggers.template import JobTemplate

FORMATS = ("json", "avro", "raw")
Format = Literal["json", "avro", "raw"]
MAX_NAME_CHARS = 100
_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
RESERVED_SOURCES = ("jobs.intake", "jobs.triggers", "jobs.triggers.dlq")
"""Topics a trigger may not read: its own outputs and definitions (a loop)."""
_SEPARATOR = "\x00"
"""Between owner and name in a record key: an owner holds no control character."""
_FIELDS = {"name", "owner", "source", "format", "filter", "job", "description"}


def name_rule(value: object) -> str:
    expected = "words of A-Z, a-z, 0-9, _ and - joined by dots, e.g. 'orders-paid'"
    return rules._name(value, MAX_NAME_CHARS, _NAME, expected)


def topic_rule(value: object) -> str:
    if not isinstance(value, str) or not _TOPIC.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"must be a Kafka topic name (A-Z, a-z, 0-9, '.', '_', '-', at most "
                         f"249 characters); got {value!r}")  # fmt: skip
    if any(value == name or value.endswith("." + name) for name in RESERVED_SOURCES):
        raise ValueError(f"{value} is jobstream's own: a trigger on it would feed itself")
    return value


@dataclass(frozen=True)
class Trigger:
    """One trigger, checked when built.

    The job a record submits belongs to the trigger's owner: a trigger is that owner's
    submission, so an API token defines triggers for its own jobs only.
    """

    name: str
    """Unique per owner: ``orders-paid``."""
    owner: str
    """Whose trigger it is, and whose jobs it submits."""
    source: str
    """The Kafka topic whose records start jobs."""
    job: JobTemplate
    """The job each matching record submits."""
    format: Format = "json"
    """How the record's value reads: JSON, Avro in Confluent's wire format (a schema
    registry, ``JOBSTREAM_SCHEMA_REGISTRY_URL``), or raw text."""
    filter: str | None = None
    """A CEL expression over ``key``, ``headers`` and ``value``: records for which it is
    true start a job; None: every record."""
    description: str = ""
    compiled: Filter | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        field_check("name", name_rule, self.name)
        field_check("owner", rules.owner, self.owner)
        field_check("source", topic_rule, self.source)
        if self.format not in FORMATS:
            raise ValidationError("format", f"must be one of {', '.join(FORMATS)}; "
                                            f"got {self.format!r}")  # fmt: skip
        if not isinstance(self.description, str) or len(self.description) > 1000:
            raise ValidationError("description", "must be text of at most 1000 characters")
        if self.job.owner is not None and self.job.owner != self.owner:
            raise ValidationError("job.owner", f"must be the trigger's owner ({self.owner}): a "
                                  "trigger submits its owner's jobs")  # fmt: skip
        if self.filter is not None:
            object.__setattr__(self, "compiled", Filter.compile(self.filter))
        self.job.check(self.owner)

    @property
    def id(self) -> str:
        """The record key on jobs.triggers."""
        return trigger_id(self.owner, self.name)

    @property
    def label(self) -> str:
        """How logs, metrics and dead letters name it: ``owner/name``."""
        return f"{self.owner}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "owner": self.owner, "source": self.source,
                "format": self.format, "filter": self.filter,
                "description": self.description, "job": self.job.to_json()}  # fmt: skip

    def encode(self) -> bytes:
        return orjson.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: object, *, owner: str | None = None) -> Trigger:
        """A trigger from its JSON form; ``owner`` (an API token's) fills or must match it."""
        if not isinstance(data, Mapping):
            raise ValidationError("trigger", "must be a JSON object")
        unknown = sorted(set(data) - _FIELDS)
        if unknown:
            raise ValidationError(unknown[0], "is not a known field")
        for name in ("name", "source", "job"):
            if data.get(name) is None:
                raise ValidationError(name, "is required")
        given = data.get("owner")
        if owner is not None and given is not None and given != owner:
            raise ValidationError("owner", f"must be this token's owner ({owner})")
        whose = owner or given
        if whose is None:
            raise ValidationError("owner", "is required")
        return cls(name=data["name"], owner=whose, source=data["source"],
                   format=data.get("format") or "json", filter=data.get("filter"),
                   description=data.get("description") or "",
                   job=JobTemplate.from_json(data["job"]))  # fmt: skip

    @classmethod
    def decode(cls, value: bytes) -> Trigger:
        try:
            data = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise ValidationError("trigger", f"is not JSON: {exc}") from None
        return cls.from_json(data)


def trigger_id(owner: str, name: str) -> str:
    return f"{owner}{_SEPARATOR}{name}"


def split_id(key: str) -> tuple[str, str]:
    """(owner, name) of a record key; ValidationError if it is not one."""
    owner, separator, name = key.partition(_SEPARATOR)
    if not separator:
        raise ValidationError("key", f"not a trigger key: {key!r}")
    return owner, name
