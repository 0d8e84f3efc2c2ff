"""The job a trigger submits for a record: a template, and the JobRequest it makes.

The parameters are taken from the record by paths, never by code: ``value`` (the whole
value), ``value.order.id``, ``value.items.0.sku`` (a list's element by index),
``key``, ``headers.source``, ``topic``, ``partition``, ``offset``, ``timestamp``. With
``pass_value`` the value (a JSON object) is the parameters, the mapped ones set over it.
Every job is built as a :class:`~jobstream._pipeline.model.job.JobRequest`, where the
submission rules live; its labels say which trigger and record started it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobstream._pipeline.errors import DeserializationError, ValidationError
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.triggers.decode import Decoded

ROOTS = ("value", "key", "headers", "topic", "partition", "offset", "timestamp")
TRIGGER_LABEL = "trigger"
RECORD_LABEL = "trigger.record"
"""Labels every triggered job carries: the trigger's name, and ``topic/partition/offset``."""
_FIELDS = {"job_type", "owner", "priority", "params", "pass_value", "labels", "keys"}


def _path_rule(path: object) -> tuple[str, ...]:
    if not isinstance(path, str) or not path:
        raise ValueError("must be a path such as value.order.id")
    parts = tuple(path.split("."))
    if parts[0] not in ROOTS:
        raise ValueError(f"must start with one of {', '.join(ROOTS)}; got {path!r}")
    if "" in parts:
        raise ValueError(f"has an empty step: {path!r}")
    if parts[0] not in ("value", "headers") and len(parts) > 1:
        raise ValueError(f"{parts[0]} has no fields; got {path!r}")
    if parts[0] == "headers" and len(parts) != 2:
        raise ValueError(f"names one header, e.g. headers.source; got {path!r}")
    return parts


@dataclass(frozen=True)
class JobTemplate:
    job_type: str
    params: Mapping[str, str] = field(default_factory=dict)
    """Parameter name -> path into the record."""
    pass_value: bool = False
    """The value (a JSON object) is the parameters; ``params`` are set over it."""
    owner: str | None = None
    """The trigger's owner, or None (the same)."""
    priority: str = "NORMAL"
    labels: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, Any] = field(default_factory=dict)
    """Passed as they are to ``JobRequest(keys=...)`` (concurrency, rate, debounce,
    singleton keys)."""

    def check(self, owner: str) -> None:
        """Every rule a record cannot change, checked once, naming ``job.<field>``."""
        if not isinstance(self.params, Mapping):
            raise ValidationError("job.params", "must map parameter names to paths")
        for name, path in self.params.items():
            if not isinstance(name, str) or not name:
                raise ValidationError("job.params", f"a parameter name must be text: {name!r}")
            try:
                _path_rule(path)
            except ValueError as exc:
                raise ValidationError(f"job.params.{name}", str(exc)) from None
        if not isinstance(self.labels, Mapping) or not isinstance(self.keys, Mapping):
            raise ValidationError("job.labels" if not isinstance(self.labels, Mapping)
                                  else "job.keys", "must be a JSON object")  # fmt: skip
        for reserved in (TRIGGER_LABEL, RECORD_LABEL):
            if reserved in self.labels:
                raise ValidationError(f"job.labels.{reserved}", "is set by the trigger")
        self.request(owner, {}, "t", "topic/0/0", None)  # the job's own rules, once

    def request(self, owner: str, params: Mapping[str, Any], trigger: str, record: str,
                idempotency_key: str | None) -> JobRequest:  # fmt: skip
        fields: dict[str, Any] = {
            "job_type": self.job_type, "owner": owner, "priority": self.priority,
            "params": dict(params), "idempotency_key": idempotency_key,
            "labels": {**self.labels, TRIGGER_LABEL: trigger, RECORD_LABEL: record},
        }  # fmt: skip
        if self.keys:
            fields["keys"] = dict(self.keys)
        try:
            return JobRequest(**fields)
        except ValidationError as exc:
            raise ValidationError("job." + exc.field.removeprefix("spec."), exc.message) from None

    def params_of(self, record: Decoded) -> dict[str, Any]:
        """The job's parameters from one record; DeserializationError naming the parameter
        whose path the record lacks."""
        params: dict[str, Any] = {}
        if self.pass_value:
            if not isinstance(record.value, dict):
                raise DeserializationError("job.pass_value: the value is not a JSON object",
                                           raw=None)  # fmt: skip
            params.update(record.value)
        for name, path in self.params.items():
            try:
                params[name] = record.at(_path_rule(path))
            except LookupError as exc:
                raise DeserializationError(f"job.params.{name}: {exc.args[0]}", raw=None) from None
        return params

    def to_json(self) -> dict[str, Any]:
        return {"job_type": self.job_type, "owner": self.owner, "priority": self.priority,
                "params": dict(self.params), "pass_value": self.pass_value,
                "labels": dict(self.labels), "keys": dict(self.keys)}  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> JobTemplate:
        if not isinstance(data, Mapping):
            raise ValidationError("job", "must be a JSON object")
        unknown = sorted(set(data) - _FIELDS)
        if unknown:
            raise ValidationError(f"job.{unknown[0]}", "is not a known field")
        if not data.get("job_type"):
            raise ValidationError("job.job_type", "is required")
        if not isinstance(data.get("pass_value", False), bool):
            raise ValidationError("job.pass_value", "must be true or false")
        return cls(job_type=data["job_type"], params=data.get("params") or {},
                   pass_value=data.get("pass_value", False), owner=data.get("owner"),
                   priority=data.get("priority") or "NORMAL", labels=data.get("labels") or {},
                   keys=data.get("keys") or {})  # fmt: skip
