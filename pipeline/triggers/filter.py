"""The filter: a CEL expression over a record's ``key``, ``headers`` and ``value``.

CEL (Google's Common Expression Language, through cel-python) is made for this: a
small expression language with no loops, no I/O and no access to the host, evaluated in
bounded time, the language of Kubernetes' admission rules and Envoy's filters. It is
parsed, never ``eval``-ed (docs/adr/0007-trigger-filters.md). An expression that does not
parse is refused when the trigger is defined; one that fails on a record (a field the
record lacks: guard with ``has(value.x)``; a value of another type) or gives anything
but a boolean makes that record unreadable, for the trigger's dead-letter topic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELUnsupportedError

from jobstream._pipeline.errors import DeserializationError, ValidationError

log = logging.getLogger(__name__)

MAX_FILTER_CHARS = 2000
_ENV = celpy.Environment()


@dataclass(frozen=True)
class Filter:
    """A compiled filter; :meth:`compile` refuses an expression that does not parse."""

    expression: str
    program: Any

    @classmethod
    def compile(cls, expression: object) -> Filter:
        if not isinstance(expression, str) or not expression.strip():
            raise ValidationError("filter", "must be a non-blank CEL expression")
        if len(expression) > MAX_FILTER_CHARS:
            raise ValidationError("filter", f"is {len(expression)} characters, more than "
                                            f"{MAX_FILTER_CHARS}")  # fmt: skip
        try:
            ast = _ENV.compile(expression)
            program = _ENV.program(ast)
        except (CELParseError, CELUnsupportedError, ValueError, TypeError) as exc:
            reason = _first_line(exc)
            raise ValidationError("filter", f"is not a CEL expression: {reason}") from None
        return cls(expression, program)

    def matches(self, key: object, headers: Mapping[str, str], value: object) -> bool:
        """Whether a record passes; DeserializationError when the expression cannot be
        evaluated on it or gives no boolean."""
        activation = {"key": _cel(key), "headers": _cel(dict(headers)), "value": _cel(value)}
        try:
            result = self.program.evaluate(activation)
        except (CELEvalError, TypeError, ValueError, KeyError, ArithmeticError) as exc:
            raise DeserializationError(f"filter: {_first_line(exc)}", raw=None) from None
        if isinstance(result, CELEvalError):
            raise DeserializationError(f"filter: {_first_line(result)}", raw=None)
        if not isinstance(result, celtypes.BoolType):
            raise DeserializationError(
                f"filter: gave {type(result).__name__} {result!r}, not a boolean", raw=None)
        return bool(result)


def _cel(value: object) -> Any:
    """A JSON-shaped value as CEL's types (null, bool, int, double, string, list, map)."""
    return celpy.json_to_cel(value)  # type: ignore[arg-type]


def _first_line(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    text = str(args[0]) if args and isinstance(args[0], str) else str(exc)
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
