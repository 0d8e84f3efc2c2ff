"""Steps the timers hold instead of a worker: a wait for a signal, a sleep, and a map.

A workflow step of job type :data:`WAIT_TYPE` or :data:`SLEEP_TYPE` never reaches an
execution topic. When it would fire, the timers begin it: it is WAITING, with no worker
slot taken, until a signal of its name arrives (a ``WorkflowSignalled`` on jobs.intake)
or its instant passes (docs/workflows.md, "Waits and sleeps"). Its parameters say what it
waits for, as JSON any Kafka client can write:

- wait: ``{"signal": "approved", "timeout": "1h", "prompt": "Ship it?", "approval": true}``
  (``timeout`` a duration, or ``timeout_ms``; none: it waits for ever);
- sleep: ``{"for": "30s"}`` (or ``for_ms``), or ``{"until": "2026-12-01T09:00", "timezone":
  "Europe/Paris"}`` (a local time there), or ``{"until_ms": 1796000000000}``;
- map: ``{"over": "list-files", "job_type": "image.render", "params": {"size": 512},
  "max_concurrency": 50, "on_item_failure": "fail"}``: one job per item of the parent
  step ``over``'s result (a JSON list), the map ending once every item has
  (pipeline/timers/maps.py).

Pure: :func:`held_step` reads a spec's parameters into a :class:`Wait`, :class:`Sleep` or
:class:`Map`,
raising :class:`~jobstream._pipeline.errors.ValidationError` naming the field
(``spec.params.timeout``); :func:`check_signal` holds a ``WorkflowSignalled`` to its rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson

from jobstream._pipeline.durations import parse_duration
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.records import Event, JobSpec, WorkflowSignalled

WAIT_TYPE = "jobstream.wait"
SLEEP_TYPE = "jobstream.sleep"
MAP_TYPE = "jobstream.map"
HELD_TYPES = frozenset({WAIT_TYPE, SLEEP_TYPE, MAP_TYPE})
"""Job types the timers run themselves: no worker serves them."""
MAX_MAP_ITEMS = 10_000
"""Items of one map: as many as steps of one workflow."""
MAX_MAP_CONCURRENCY = 10_000

MAX_SIGNAL_CHARS = 100
MAX_PROMPT_CHARS = 2000
MAX_SIGNAL_PAYLOAD_BYTES = 256 * 1024
"""A signal's payload becomes the step's inline result: the bound of a result inline."""
NEVER_MS = 2**53
"""The due instant of a wait without a timeout: in the schedule, never due."""
MAX_HELD_MS = 10 * 366 * 86_400_000
"""The longest a wait's timeout or a sleep's duration may be: about ten years, as far ahead
as a submission may name."""


@dataclass(frozen=True, slots=True)
class Wait:
    signal: str
    """The name of the signal that ends it."""
    timeout_ms: int | None
    """How long it waits once begun; past it, it ends EXPIRED. None: for ever."""
    prompt: str | None = None
    """What a person is asked (an approval): the dashboard shows it."""
    approval: bool = False
    """A person decides: the dashboard lists it with Approve and Reject, and a one-time
    link completes it without an API token."""

    def until_ms(self, began_ms: int) -> int:
        return NEVER_MS if self.timeout_ms is None else began_ms + self.timeout_ms


@dataclass(frozen=True, slots=True)
class Sleep:
    for_ms: int | None = None
    """A duration from the moment it begins."""
    until_ms: int | None = None
    """An instant (epoch ms), read from ``until`` in its time zone, or given as it is."""

    def wake_ms(self, began_ms: int) -> int:
        if self.for_ms is not None:
            return began_ms + self.for_ms
        assert self.until_ms is not None
        return self.until_ms


@dataclass(frozen=True, slots=True)
class Map:
    over: str
    """The parent step (by name) whose result, a JSON list, it maps."""
    job_type: str
    """Each item's job type: a worker's."""
    params: dict[str, Any]
    """Each item's params, beside ``item`` (its value) and ``index`` (from 0)."""
    max_concurrency: int = 10
    """Items run at most at once; the next starts as one ends."""
    fail_fast: bool = True
    """on_item_failure ``fail`` (true): an item that ends failed cancels the rest and the
    map ends CANCELLED; ``continue``: every item runs and the map SUCCEEDS."""


Held = Wait | Sleep | Map


def is_held(spec: JobSpec) -> bool:
    return spec.job_type in HELD_TYPES


def held_step(spec: JobSpec) -> Held:
    """What a held step's parameters ask for; ValidationError naming ``spec.params.<field>``."""
    params = orjson.loads(spec.params)
    if not isinstance(params, dict):
        raise ValidationError("spec.params", "must be a JSON object")
    if spec.job_type == WAIT_TYPE:
        return _wait(params)
    if spec.job_type == SLEEP_TYPE:
        return _sleep(params)
    if spec.job_type == MAP_TYPE:
        return _map(params)
    raise ValidationError("spec.job_type", f"{spec.job_type!r} is not a held step's type")


def check_held(spec: JobSpec, workflow_id: str | None) -> None:
    """The rules of a submitted wait, sleep or map beyond its parameters: a wait or a map
    belongs to a workflow (a signal names the workflow, a map's items join it), and none
    repeats."""
    held_step(spec)
    if spec.job_type in (WAIT_TYPE, MAP_TYPE) and workflow_id is None:
        kind = spec.job_type.removeprefix("jobstream.")
        raise ValidationError("workflow_id", f"a {kind} step belongs to a workflow")
    if spec.cron is not None:
        raise ValidationError("spec.cron", f"a {spec.job_type} step runs once")


def held_refusal(spec: JobSpec, workflow_id: str | None) -> str | None:
    """Why :func:`check_held` refuses ``spec`` (``field: message``), or None."""
    try:
        check_held(spec, workflow_id)
    except ValidationError as exc:
        return str(exc)
    return None


def _wait(params: dict[str, Any]) -> Wait:
    _only(params, {"signal", "timeout", "timeout_ms", "prompt", "approval"})
    signal = _field("signal", signal_name, params.get("signal"))
    timeout = _duration(params, "timeout")
    prompt = params.get("prompt")
    if prompt is not None:
        _field("prompt", _prompt, prompt)
    approval = params.get("approval", False)
    if not isinstance(approval, bool):
        raise ValidationError("spec.params.approval", "must be true or false")
    return Wait(signal=signal, timeout_ms=timeout, prompt=prompt, approval=approval)


def _sleep(params: dict[str, Any]) -> Sleep:
    _only(params, {"for", "for_ms", "until", "until_ms", "timezone"})
    duration = _duration(params, "for")
    until = params.get("until_ms")
    if until is not None and (not isinstance(until, int) or isinstance(until, bool)
                              or not 0 <= until < NEVER_MS):  # fmt: skip
        raise ValidationError("spec.params.until_ms", "must be an instant in epoch ms")
    if "until" in params:
        if until is not None:
            raise ValidationError("spec.params.until", "give until or until_ms, not both")
        until = _local_instant(params["until"], params.get("timezone", "UTC"))
    elif "timezone" in params:
        raise ValidationError("spec.params.timezone", "goes with until (a local time)")
    if (duration is None) == (until is None):
        raise ValidationError("spec.params", "a sleep needs one of for, for_ms, until or "
                                             "until_ms")  # fmt: skip
    return Sleep(for_ms=duration, until_ms=until)


def _map(params: dict[str, Any]) -> Map:
    _only(params, {"over", "job_type", "params", "max_concurrency", "on_item_failure"})
    over = _field("over", signal_name, params.get("over"))
    job_type = _field("job_type", rules.job_type, params.get("job_type"))
    if job_type in HELD_TYPES:
        raise ValidationError("spec.params.job_type", "must be a worker's job type")
    item_params = params.get("params", {})
    if not isinstance(item_params, dict):
        raise ValidationError("spec.params.params", "must be a JSON object")
    for reserved in ("item", "index"):
        if reserved in item_params:
            raise ValidationError(f"spec.params.params.{reserved}", "is each item's own")
    concurrency = params.get("max_concurrency", 10)
    if (not isinstance(concurrency, int) or isinstance(concurrency, bool)
            or not 1 <= concurrency <= MAX_MAP_CONCURRENCY):  # fmt: skip
        raise ValidationError("spec.params.max_concurrency",
                              f"must be an integer from 1 to {MAX_MAP_CONCURRENCY}")  # fmt: skip
    failure = params.get("on_item_failure", "fail")
    if failure not in ("fail", "continue"):
        raise ValidationError("spec.params.on_item_failure", "must be 'fail' or 'continue'")
    return Map(over=over, job_type=job_type, params=item_params,
               max_concurrency=concurrency, fail_fast=failure == "fail")  # fmt: skip


def _only(params: dict[str, Any], known: set[str]) -> None:
    for name in params:
        if name not in known:
            raise ValidationError(f"spec.params.{name}",
                                  f"unknown; expected {', '.join(sorted(known))}")  # fmt: skip


def _duration(params: dict[str, Any], name: str) -> int | None:
    """``name`` as a duration text, or ``name_ms`` as milliseconds; None when neither."""
    text, ms = params.get(name), params.get(f"{name}_ms")
    if text is not None and ms is not None:
        raise ValidationError(f"spec.params.{name}", f"give {name} or {name}_ms, not both")
    if text is not None:
        if not isinstance(text, str):
            raise ValidationError(f"spec.params.{name}", "must be a duration text, e.g. '1h'")
        ms = parse_duration(text, option=f"spec.params.{name}")
    elif ms is not None and (not isinstance(ms, int) or isinstance(ms, bool)):
        raise ValidationError(f"spec.params.{name}_ms", "must be an integer (ms)")
    if ms is not None and not 0 < ms <= MAX_HELD_MS:
        most = f"{MAX_HELD_MS} ms (about ten years)"
        raise ValidationError(f"spec.params.{name}", f"must be more than 0 and at most {most}")
    return ms


def _local_instant(text: object, zone: object) -> int:
    if not isinstance(zone, str):
        raise ValidationError("spec.params.timezone", "must be an IANA time zone name")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder, a long name
        raise ValidationError("spec.params.timezone", f"unknown time zone {zone!r}") from None
    if not isinstance(text, str):
        raise ValidationError("spec.params.until", "must be an ISO 8601 local time")
    try:
        local = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError("spec.params.until", f"{text!r} is not an ISO 8601 time") from None
    if local.tzinfo is not None:
        raise ValidationError("spec.params.until", "is a local time: give its zone in timezone")
    try:
        instant = int(local.replace(tzinfo=tz).timestamp() * 1000)
    except (OverflowError, ValueError, OSError):
        instant = -1
    if not 0 <= instant < NEVER_MS:
        raise ValidationError("spec.params.until", f"{text!r} is not an instant after 1970")
    return instant


def _field(name: str, rule: Any, value: object) -> Any:
    return rules.field_check(f"spec.params.{name}", rule, value)


def signal_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-blank string")
    if len(value) > MAX_SIGNAL_CHARS:
        raise ValueError(f"is {len(value)} characters, more than {MAX_SIGNAL_CHARS}")
    if any(ord(char) < 32 for char in value):
        raise ValueError("must not contain control characters")
    return value


def _prompt(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if len(value) > MAX_PROMPT_CHARS:
        raise ValueError(f"is {len(value)} characters, more than {MAX_PROMPT_CHARS}")
    return value


def signal_event(owner: str, workflow_id: str, name: str, payload: Any = None, *,
                 now_ms: int, reject: bool = False, step: str | None = None,
                 reason: str | None = None, requested_by: str | None = None,
                 ) -> Event:  # fmt: skip
    """The WorkflowSignalled of ``name`` for ``owner``'s workflow, checked: ``payload`` (any
    JSON value) becomes the result of the step it ends; ``reject`` cancels that step
    instead; ``step`` addresses one step by name only."""
    text = None if payload is None else orjson.dumps(payload).decode()
    record = WorkflowSignalled(workflow_id=workflow_id, owner=owner, name=name, payload=text,
                               reject=reject, step=step, sent_at_ms=now_ms, reason=reason,
                               requested_by=requested_by)  # fmt: skip
    check_signal(record)
    return Event.of(record)


def check_signal(record: WorkflowSignalled) -> None:
    """A WorkflowSignalled's rules, whoever wrote it; ValidationError naming the field."""
    rules.field_check("workflow_id", rules.workflow_id, record.workflow_id)
    rules.field_check("owner", rules.owner, record.owner)
    rules.field_check("name", signal_name, record.name)
    if record.payload is not None:
        if len(record.payload.encode()) > MAX_SIGNAL_PAYLOAD_BYTES:
            raise ValidationError("payload", f"is more than {MAX_SIGNAL_PAYLOAD_BYTES} bytes")
        try:
            orjson.loads(record.payload)
        except orjson.JSONDecodeError as exc:
            raise ValidationError("payload", f"is not JSON: {exc}") from None
    for name, value in (("reason", record.reason), ("requested_by", record.requested_by)):
        if value is not None:
            rules.field_check(name, rules.reason, value)
