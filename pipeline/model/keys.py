"""A job's keys: what it touches, as keys that limit, pace and collapse the jobs sharing them.

A submission names up to four (docs/keys.md):

- **concurrency**: at most ``limit`` runs of the key at once across the fleet (the workers
  count them);
- **rate**: the key's jobs fire at most at ``rate`` (the timers hold the rest);
- **debounce**: submissions of the key within ``window_ms`` of one another collapse into one
  run, started after the window, no later than ``max_delay_ms`` after the first;
- **singleton**: while a job of the key is queued or running, a new one is dropped or
  replaces the queued one.

A key is given (``"customer-42"``) or taken from the job by a path in braces
(``"customer-{params.customer.id}"``, ``"{labels.tenant}"``); :func:`resolve` fills the
braces when the submission is built (JobRequest), so the record on jobs.intake carries
the key itself, and a producer of any language writes it as it is. A key belongs to its
owner: owner A's key ``x`` and owner B's never meet.

Pure: the request models, the record they become, and the rules of both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from jobstream._pipeline.avro_bounds import LONG_MAX
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.paths import walk
from jobstream._pipeline.model.records import DebounceKeep, JobKeys, JobSubmitted, SingletonMode

MAX_KEY_CHARS = rules.MAX_KEY_CHARS
MAX_CONCURRENCY_LIMIT = 10_000
DEBOUNCE_MAX_WINDOWS = 10
"""A debounce window without ``max_delay_ms`` stays open at most this many windows."""
MAX_DEBOUNCE_MS = 24 * 3_600_000
"""The longest debounce window or delay: a debounced job is held at the timers meanwhile."""
_BRACED = re.compile(r"\{([^{}]*)\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


def key_text(value: object) -> str:
    """A key as a record holds it: text of at most MAX_KEY_CHARS, no control character,
    no brace (braces are for paths, filled before a record is written)."""
    text = rules.job_key(value)
    if "{" in text or "}" in text:
        raise ValueError(f"{text!r} has a brace that is not a path such as '{{params.id}}'")
    return text


def _lookup(path: str, params: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """The job's value at ``path`` (``params.a.b``, ``params.items.0``, ``labels.name``)."""
    root, _, rest = path.partition(".")
    names = rest.split(".") if rest else []
    if root not in ("params", "labels") or not names or not all(map(_SEGMENT.fullmatch, names)):
        raise ValueError(f"{{{path}}} is not a path: write {{params.<name>[.<name>...]}} "
                         "or {labels.<name>}")  # fmt: skip
    try:
        value = walk(params if root == "params" else labels, names)
    except LookupError as exc:
        raise ValueError(f"{{{path}}}: the job has no {names[exc.args[0]]!r} there") from None
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, Mapping | list):
        kind = "null" if value is None else type(value).__name__
        raise ValueError(f"{{{path}}} is {kind}, not a string or number")
    return str(value)


def resolve(template: str, params: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """``template`` with each ``{path}`` replaced by the job's value there; ValueError
    naming the path the job lacks, or a key that breaks :func:`key_text`."""
    filled = _BRACED.sub(lambda match: _lookup(match.group(1).strip(), params, labels), template)
    return key_text(filled)


def _template(value: object) -> str:
    """A key or a template: bounded text whose braces each hold one path."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    outside = _BRACED.sub("", value)
    if "{" in outside or "}" in outside:
        raise ValueError(f"{value!r} has an unmatched brace")
    key_text(_BRACED.sub("x", value))
    return value


class _KeyModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    key: str
    """The key, or a template of paths into the job (``customer-{params.customer_id}``)."""

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        return _template(value)


class ConcurrencySpec(_KeyModel):
    limit: int = Field(default=1, ge=1, le=MAX_CONCURRENCY_LIMIT)
    """Runs of the key at once, across every worker."""


class RateSpec(_KeyModel):
    rate: str
    """Firings of the key per second, minute or hour: ``100/min``, ``5/s``, ``1000/h``."""

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        rules.rate_per_second(value)
        return value


class DebounceSpec(_KeyModel):
    window_ms: int = Field(gt=0, le=MAX_DEBOUNCE_MS)
    """The quiet time after the last submission that ends the window."""
    max_delay_ms: int | None = Field(default=None, gt=0, le=MAX_DEBOUNCE_MS)
    """The longest the window stays open after its first submission; None: ten windows."""
    keep: Literal["LAST", "FIRST"] = "LAST"
    """Whose params the run takes."""

    @model_validator(mode="after")
    def _delay_covers_window(self) -> DebounceSpec:
        if self.max_delay_ms is not None and self.max_delay_ms < self.window_ms:
            raise ValueError(f"max_delay_ms ({self.max_delay_ms}) is shorter than "
                             f"window_ms ({self.window_ms})")  # fmt: skip
        return self


class SingletonSpec(_KeyModel):
    mode: Literal["DROP", "REPLACE"] = "DROP"
    """While a job of the key is queued or running: drop the new one, or let it replace
    the queued one."""


class Keys(BaseModel):
    """The keys of a submission (JobRequest's ``keys``); each optional."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    concurrency: ConcurrencySpec | None = None
    rate: RateSpec | None = None
    debounce: DebounceSpec | None = None
    singleton: SingletonSpec | None = None

    @model_validator(mode="after")
    def _one_collapse(self) -> Keys:
        if self.debounce is not None and self.singleton is not None:
            raise ValueError("debounce and singleton cannot both be set: each decides alone "
                             "what becomes of a new submission")  # fmt: skip
        return self

    def record(self, params: Mapping[str, Any], labels: Mapping[str, str]) -> JobKeys:
        """The JobKeys record of a job with ``params`` and ``labels``: every template
        filled; ValueError naming the key (``concurrency.key: ...``) otherwise."""
        def filled(name: str, spec: _KeyModel | None) -> str | None:
            if spec is None:
                return None
            try:
                return resolve(spec.key, params, labels)
            except ValueError as exc:
                raise ValueError(f"{name}.key: {exc}") from None

        debounce = self.debounce
        return JobKeys(
            concurrency_key=filled("concurrency", self.concurrency),
            concurrency_limit=1 if self.concurrency is None else self.concurrency.limit,
            rate_key=filled("rate", self.rate),
            rate=None if self.rate is None else self.rate.rate,
            debounce_key=filled("debounce", debounce),
            debounce_window_ms=0 if debounce is None else debounce.window_ms,
            debounce_max_ms=None if debounce is None else debounce.max_delay_ms,
            debounce_keep=DebounceKeep(debounce.keep if debounce else "LAST"),
            singleton_key=filled("singleton", self.singleton),
            singleton_mode=SingletonMode(self.singleton.mode if self.singleton else "DROP"),
        )


def request_fields(record: JobKeys) -> dict[str, Any]:
    """A record's keys in the request's form (:class:`Keys` checks them as a caller's)."""
    def given(key: str | None, **fields: Any) -> dict[str, Any] | None:
        return None if key is None else {"key": key, **fields}

    fields = {
        "concurrency": given(record.concurrency_key, limit=record.concurrency_limit),
        "rate": given(record.rate_key, rate=record.rate),
        "debounce": given(record.debounce_key, window_ms=record.debounce_window_ms,
                          max_delay_ms=record.debounce_max_ms, keep=str(record.debounce_keep)),
        "singleton": given(record.singleton_key, mode=str(record.singleton_mode)),
    }
    return {name: value for name, value in fields.items() if value is not None}


def has_keys(keys: JobKeys | None) -> bool:
    """Whether a record names any key."""
    return keys is not None and any((keys.concurrency_key, keys.rate_key, keys.debounce_key,
                                     keys.singleton_key))  # fmt: skip


def debounce_delay_ms(keys: JobKeys) -> int:
    """The longest a debounce window stays open after its first submission."""
    if keys.debounce_max_ms is not None:
        return keys.debounce_max_ms
    return min(keys.debounce_window_ms * DEBOUNCE_MAX_WINDOWS, LONG_MAX)


def scoped(owner: str, key: str) -> str:
    """A key with its owner, as the fleet counts it: NUL cannot be in an owner."""
    return f"{owner}\x00{key}"


def shown(keys: JobKeys | None) -> dict[str, Any]:
    """The keys as the API, the CLI and jobs.status show them: only those set."""
    if not has_keys(keys):
        return {}
    assert keys is not None
    out: dict[str, Any] = {}
    if keys.concurrency_key is not None:
        out["concurrency"] = {"key": keys.concurrency_key, "limit": keys.concurrency_limit}
    if keys.rate_key is not None:
        out["rate"] = {"key": keys.rate_key, "rate": keys.rate}
    if keys.debounce_key is not None:
        out["debounce"] = {"key": keys.debounce_key, "window_ms": keys.debounce_window_ms,
                           "max_delay_ms": debounce_delay_ms(keys),
                           "keep": str(keys.debounce_keep)}  # fmt: skip
    if keys.singleton_key is not None:
        out["singleton"] = {"key": keys.singleton_key, "mode": str(keys.singleton_mode)}
    return out


def check_keys(record: JobSubmitted) -> None:
    """The rules across a submission's keys and its other fields: a debounced or singleton
    job is one job on its own, now (not recurring, not a workflow's step, no run time):
    ValidationError naming ``spec.job_keys``. A record's keys are filled (no path left);
    each key's own rules are :class:`Keys`'s, which a record's keys pass through too
    (:func:`request_fields`)."""
    keys, spec = record.spec.job_keys, record.spec
    if keys is None:
        return
    for name, fields in request_fields(keys).items():  # filled: no path left in braces
        rules.field_check(f"spec.job_keys.{name}.key", key_text, fields["key"])
    collapse = "debounce_key" if keys.debounce_key is not None else (
        "singleton_key" if keys.singleton_key is not None else None)
    if collapse is None:
        return
    for field, present in (("cron", spec.cron is not None),
                           ("workflow_id", record.workflow_id is not None),
                           ("run_at_ms", spec.run_at_ms is not None
                                         and keys.debounce_key is not None)):  # fmt: skip
        if present:
            raise ValidationError(f"spec.job_keys.{collapse}",
                                  f"a debounced or singleton job takes no {field}: it is one "
                                  "job of its own, run when its key allows")  # fmt: skip
    own_labels = len(spec.labels) - (SINGLETON_LABEL in spec.labels)
    if keys.singleton_key is not None and own_labels >= rules.MAX_LABELS:
        raise ValidationError("spec.labels", f"a singleton job takes at most "
                              f"{rules.MAX_LABELS - 1} labels: its key's timers add "
                              f"{SINGLETON_LABEL}")  # fmt: skip
    latest = record.submitted_at_ms + debounce_delay_ms(keys)
    if keys.debounce_key is not None and (spec.deadline_ms or latest + 1) <= latest:
        raise ValidationError("spec.deadline_ms", "a debounced job's deadline must fall after "
                              f"its window's latest close ({debounce_delay_ms(keys)} ms after "
                              "the submission): its run starts no sooner")  # fmt: skip
