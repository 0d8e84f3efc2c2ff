"""The field rules of a job submission and of the commands, as plain functions.

Each rule takes a value and returns it (normalised) or raises ValueError with a message that
reads after the field's name: ``spec.owner: must not be blank``. pydantic calls them from
:class:`jobstream._pipeline.model.job.JobRequest`, which attaches the field's path; the record
checks
and the command builders call them through :func:`field_check`. Keeping them here, out of
the models, is what lets a record from any Kafka client meet exactly the rules a Python
caller meets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.idempotency import is_job_id
from jobstream._pipeline.model.lifecycle import SCHEDULE_JOB_TYPE
from jobstream._pipeline.scheduling.ids import ID_LENGTH

T = TypeVar("T")

MAX_JOB_TYPE_CHARS = 100
"""A job type becomes part of topic names (jobs.exec.<type>.<priority>, at most 249 chars)."""
MAX_OWNER_CHARS = 200
MAX_POOL_CHARS = 50
"""A pool becomes part of topic names too (jobs.exec.<type>.pool-<pool>.<priority>)."""
MAX_PARAMS_BYTES = 1_000_000
"""Parameters as compact UTF-8 JSON; the topics accept 2 MiB records, envelope included."""
MAX_IDEMPOTENCY_KEY_CHARS = 200
MAX_KEY_CHARS = 200
"""A job's concurrency, rate, debounce or singleton key (pipeline/model/keys.py)."""
MAX_WORKFLOW_ID_CHARS = 200
"""A workflow id is a path segment of the API (/api/v1/workflows/{id}) and a partition key."""
MAX_LABELS = 32
"""Labels of one job; each is a key of the views' label index."""
MAX_LABEL_NAME_CHARS = 100
MAX_LABEL_VALUE_CHARS = 500
MAX_REASON_CHARS = 1000

PRIORITIES = ("HIGH", "NORMAL", "LOW")
"""The symbols of io.jobstream.Priority; callers may write them in any case."""
PARENT_FAILURE_POLICIES = ("CANCEL", "RUN")
"""The symbols of io.jobstream.ParentFailurePolicy."""

_JOB_TYPE = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")
_POOL = re.compile(r"[a-z0-9][a-z0-9_-]*")
_WORKFLOW_ID = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
"""The job type's grammar widened to upper case (derived ids are ULIDs and base32 digests)
and ``-`` (``payroll-2026``): nothing that a URL path, a terminal or a NUL-joined key would
read otherwise."""
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def field_check(field: str, rule: Callable[[Any], T], value: object) -> T:
    """Apply ``rule``; its ValueError becomes a ValidationError naming ``field``."""
    try:
        return rule(value)
    except ValueError as exc:
        raise ValidationError(field, str(exc)) from None


def job_type(value: str) -> str:
    if value == SCHEDULE_JOB_TYPE:
        raise ValueError(f"{SCHEDULE_JOB_TYPE} is reserved: recurring workflows' status has it")
    return _name(value, MAX_JOB_TYPE_CHARS, _JOB_TYPE,
                 "words of a-z, 0-9 and _ joined by dots, e.g. 'report.generate'")  # fmt: skip


def pool(value: str) -> str:
    return _name(value, MAX_POOL_CHARS, _POOL,
                 "a-z, 0-9, _ and -, from a letter or digit, e.g. 'gpu' or 'eu-west'")  # fmt: skip


def _name(value: object, max_chars: int, pattern: re.Pattern[str], expected: str) -> str:
    """A name that becomes part of topic names: a string of ``pattern``, at most ``max_chars``."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if len(value) > max_chars:
        raise ValueError(f"is {len(value)} characters, more than {max_chars}")
    if not pattern.fullmatch(value):
        raise ValueError(f"must be {expected}; got {value!r}")
    return value


def owner(value: str) -> str:
    """Non-blank, no control characters: NUL separates owner from key in idempotent ids."""
    _text(value, MAX_OWNER_CHARS)
    if not value.strip():
        raise ValueError("must not be blank")
    if _has_control(value):
        raise ValueError("must not contain control characters")
    return value


def _text(value: object, max_chars: int) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if not value:
        raise ValueError("must not be empty")
    if len(value) > max_chars:
        raise ValueError(f"is {len(value)} characters, more than {max_chars}")
    return value


_RATE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*")
_PER_SECOND = {"s": 1.0, "m": 60.0, "h": 3600.0}


def rate_per_second(text: object) -> float:
    """``50/s``, ``300/min`` or ``1000/h`` (``s``/``sec``/``second``, ``m``/``min``/
    ``minute``, ``h``/``hour``) as events per second; ValueError otherwise."""
    match = _RATE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"must be a number per s, min or h, e.g. '100/min'; got {text!r}")
    rate = float(match.group(1)) / _PER_SECOND[match.group(2)[0]]
    if rate <= 0:
        raise ValueError(f"must be positive, got {text!r}")
    return rate


def job_key(value: object) -> str:
    """A key of a job's keys: bounded text with no control character."""
    text = _text(value, MAX_KEY_CHARS)
    if _has_control(text):
        raise ValueError("must not contain control characters")
    return text


def idempotency_key(value: str) -> str:
    return _text(value, MAX_IDEMPOTENCY_KEY_CHARS)


def workflow_id(value: str) -> str:
    return _name(value, MAX_WORKFLOW_ID_CHARS, _WORKFLOW_ID,
                 "words of A-Z, a-z, 0-9, _ and - joined by dots, e.g. 'payroll-2026'")  # fmt: skip


def labels(value: Mapping[str, str]) -> dict[str, str]:
    """At most MAX_LABELS; a name has no ``=`` (a query's ``label=name=value`` splits at its
    first ``=``), neither holds a control character, both are bounded."""
    if len(value) > MAX_LABELS:
        raise ValueError(f"are {len(value)} labels, more than {MAX_LABELS}")
    for name, text in value.items():
        _text(name, MAX_LABEL_NAME_CHARS)
        if "=" in name:
            raise ValueError(f"name {name!r} must not contain '='")
        if not isinstance(text, str):
            raise ValueError(f"{name}: must be a string")
        if len(text) > MAX_LABEL_VALUE_CHARS:
            raise ValueError(f"{name}: is {len(text)} characters, more than "
                             f"{MAX_LABEL_VALUE_CHARS}")  # fmt: skip
        if _has_control(name + text):
            raise ValueError(f"{name!r}: must not contain control characters")
    return dict(value)


def _has_control(text: str) -> bool:
    return any(ord(char) < 32 or ord(char) == 127 for char in text)


def reason(value: str) -> str:
    return _text(value, MAX_REASON_CHARS)


def job_id(value: str) -> str:
    if not is_job_id(value):
        raise ValueError(
            f"must be a {ID_LENGTH}-character upper-case Crockford base32 job id, got {value!r}"
        )
    return value


def priority(value: object) -> str:
    if isinstance(value, str) and value.upper() in PRIORITIES:
        return value.upper()
    raise ValueError(f"must be one of high, normal, low; got {value!r}")


def policy(value: object) -> str:
    """``on_parent_failure``: CANCEL or RUN, in any case."""
    if isinstance(value, str) and value.upper() in PARENT_FAILURE_POLICIES:
        return value.upper()
    raise ValueError(f"must be one of cancel, run; got {value!r}")


def params(value: object) -> dict[str, Any]:
    """A JSON object, given as a mapping or as JSON text, of at most MAX_PARAMS_BYTES.

    Text is measured before it is parsed, so an oversized record costs no parsing.
    """
    if isinstance(value, str | bytes):
        size = len(value.encode()) if isinstance(value, str) else len(value)
        _check_size(size)
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            kind = _JSON_TYPES.get(type(value), "a number" if value is not None else "null")
            raise ValueError(f"must be a JSON object, not {kind}")
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a JSON object (a mapping or JSON text), not {type(value)}")
    encode_params(value)
    return dict(value)


def encode_params(value: Mapping[str, Any]) -> str:
    """Compact JSON text of ``value``; ValueError when it cannot be encoded or is too big.

    NaN and the infinities are refused: JSON has no such numbers, and orjson writes them as
    null, storing a value the caller never sent. Only text with a null is walked for them.
    """
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise ValueError(f"is not JSON-encodable: {exc}") from None
    if b"null" in text:
        _check_finite(value)
    _check_size(len(text))
    return text.decode()


def _check_finite(value: object) -> None:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"holds {item}, which JSON cannot carry")
        elif isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)


def _check_size(size: int) -> None:
    if size > MAX_PARAMS_BYTES:
        raise ValueError(f"is {size} bytes of JSON, more than {MAX_PARAMS_BYTES}")
