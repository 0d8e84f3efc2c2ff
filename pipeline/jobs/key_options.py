"""``jobstream submit``'s key options as JobRequest's ``keys`` (docs/keys.md).

Each option is one key in a line's worth of text; JobRequest checks what they build and
names the field at fault, this module only splits the text:

- ``--concurrency KEY[:LIMIT]``: ``customer-{params.id}:2`` (limit 1 when left out);
- ``--rate KEY=RATE``: ``crm=100/min``;
- ``--debounce KEY=WINDOW`` (``customer-42=5s``), with ``--debounce-max`` and
  ``--debounce-keep first|last``;
- ``--singleton KEY`` with ``--singleton-mode drop|replace``.
"""

from __future__ import annotations

from typing import Any

from jobstream._pipeline.durations import parse_duration
from jobstream._pipeline.errors import ValidationError


def _split(text: str, separator: str, field: str, form: str) -> tuple[str, str]:
    key, found, value = text.rpartition(separator)
    if not found or not key or not value:
        raise ValidationError(field, f"expected {form}, got {text!r}")
    return key, value


def key_options(*, concurrency: str | None = None, rate: str | None = None,
                debounce: str | None = None, debounce_max: str | None = None,
                debounce_keep: str | None = None, singleton: str | None = None,
                singleton_mode: str | None = None) -> dict[str, Any] | None:  # fmt: skip
    """The ``keys`` of the options given; None when none is."""
    keys: dict[str, Any] = {}
    if concurrency is not None:
        key, _, limit = concurrency.rpartition(":")
        if key and limit.isdigit():
            keys["concurrency"] = {"key": key, "limit": int(limit)}
        else:
            keys["concurrency"] = {"key": concurrency}
    if rate is not None:
        key, per = _split(rate, "=", "spec.job_keys.rate", "KEY=RATE, e.g. crm=100/min")
        keys["rate"] = {"key": key, "rate": per}
    if debounce is not None:
        key, window = _split(debounce, "=", "spec.job_keys.debounce",
                             "KEY=WINDOW, e.g. customer-42=5s")  # fmt: skip
        keys["debounce"] = {"key": key, "window_ms": parse_duration(
            window, option="spec.job_keys.debounce.window_ms")}  # fmt: skip
        if debounce_max is not None:
            keys["debounce"]["max_delay_ms"] = parse_duration(
                debounce_max, option="spec.job_keys.debounce.max_delay_ms")
        if debounce_keep is not None:
            keys["debounce"]["keep"] = debounce_keep.upper()
    elif debounce_max is not None or debounce_keep is not None:
        raise ValidationError("spec.job_keys.debounce", "--debounce-max and --debounce-keep "
                              "need --debounce")  # fmt: skip
    if singleton is not None:
        keys["singleton"] = {"key": singleton}
        if singleton_mode is not None:
            keys["singleton"]["mode"] = singleton_mode.upper()
    elif singleton_mode is not None:
        raise ValidationError("spec.job_keys.singleton", "--singleton-mode needs --singleton")
    return keys or None
