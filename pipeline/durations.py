"""Durations on the command line: one form, a number with a unit (``250ms``, ``2.5s``, ``2h``).

Every option that is a span of time takes this form and is read by ``parse_duration``, so
no option name carries a unit and no caller guesses what a bare number means: a bare
number is refused rather than read in a unit the user may not have meant.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import typer

from jobstream._pipeline.errors import ValidationError

UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
"""Milliseconds in one of each unit a duration may be written in."""
FORM = "a number with a unit: ms, s, m, h or d (e.g. 250ms, 2.5s, 30m, 2h, 7d)"
"""The accepted form, as error messages and help texts state it."""

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")


class DurationError(ValidationError):
    """A text is not a duration; ``field`` names the option (or field) it was given for."""


def parse_duration(text: str, *, option: str = "duration") -> int:
    """Milliseconds in ``text``, a number with a unit: ``250ms``, ``2.5s``, ``30m``, ``2h``, ``7d``.

    ``option`` names what the text was given for, in the error. Decimals are read exactly
    (``0.1s`` is 100 ms), and a duration finer than a millisecond is refused rather than
    rounded: no option of ours means anything below one.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise DurationError(option, f"{text!r} is not a duration; expected {FORM}")
    ms = Decimal(match[1]) * UNIT_MS[match[2]]
    if ms != ms.to_integral_value():
        raise DurationError(option, f"{text!r} is finer than a millisecond")
    return int(ms)


def format_duration(ms: int) -> str:
    """``ms`` in the largest unit that holds it whole: 100 -> ``100ms``, 30000 -> ``30s``.

    What ``parse_duration`` reads back as ``ms``; used for defaults shown in help texts.
    """
    if ms < 0:
        raise ValueError(f"a duration is not negative, got {ms} ms")
    for unit in ("d", "h", "m", "s"):
        if ms and ms % UNIT_MS[unit] == 0:
            return f"{ms // UNIT_MS[unit]}{unit}"
    return f"{ms}ms" if ms else "0s"


class DurationParser:
    """Typer's ``parser=`` for a duration option: the value in milliseconds, within bounds.

    A bad value raises ``typer.BadParameter``, which typer reports as a usage error (exit 2)
    under the option's name: "Invalid value for '--lease': '30' is not a duration; ...".
    """

    def __init__(self, *, minimum_ms: int = 0, maximum_ms: int | None = None) -> None:
        self.minimum_ms = minimum_ms
        self.maximum_ms = maximum_ms

    def __call__(self, value: str) -> int:
        try:
            ms = parse_duration(value)
        except DurationError as exc:
            raise typer.BadParameter(exc.message) from None
        if ms < self.minimum_ms:
            raise typer.BadParameter(f"{value!r} is less than {format_duration(self.minimum_ms)}")
        if self.maximum_ms is not None and ms > self.maximum_ms:
            raise typer.BadParameter(f"{value!r} is more than {format_duration(self.maximum_ms)}")
        return ms


def duration_option(default: str | None, *names: str, minimum: str | None = None,
                    maximum: str | None = None, **options: Any) -> Any:  # fmt: skip
    """A typer option whose value is a duration, given to the command in milliseconds.

    ``default``, ``minimum`` and ``maximum`` are durations as a user would type them, so the
    help shows the default in the form the option takes.
    """
    parser = DurationParser(
        minimum_ms=0 if minimum is None else parse_duration(minimum, option="minimum"),
        maximum_ms=None if maximum is None else parse_duration(maximum, option="maximum"),
    )
    return typer.Option(default, *names, parser=parser, metavar="<duration>", **options)
