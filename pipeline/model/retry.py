"""Where a retry is decided: the retry policy, the per-type defaults, and the decision.

Pure and broker-free. The router (pipeline/retry/router.py) feeds :func:`decide` one
failure (a FAILED, TIMED_OUT or LOST JobLifecycle carrying its ``execution``) and the
policy that applies to it: the job's own ``spec.retry``, else its type's default.

A job's ``spec.retry`` is a whole Avro record, every field filled in (by the writer or by
the schema's defaults), so it replaces the type's default rather than being merged into
it: ``jobstream submit --max-attempts 5`` gets the schema's backoff, not the type's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from pipeline.errors import ConfigurationError, ValidationError
from pipeline.model.backoff import compute_backoff
from pipeline.model.lifecycle import IMPLIED_ERRORS

log = logging.getLogger(__name__)

EXHAUSTED = "exhausted"
"""DeadLettered.reason: the last allowed attempt failed."""
NON_RETRYABLE = "non_retryable"
"""DeadLettered.reason: the error says another attempt cannot help."""

DEFAULTS_ENV = "JOBSTREAM_RETRY_DEFAULTS"
GLOBAL_KEY = "*"
"""In JOBSTREAM_RETRY_DEFAULTS, the entry that changes the default of every type."""

_UNREPORTED_ERROR = ("UnknownError", "the worker reported a failure without an error")
"""A FAILED without an ErrorInfo (defensive: workers always send one)."""


def error_type_matches(actual: str, wanted: str) -> bool:
    """Full name, or its last dotted part: ``BadInput`` names ``app.errors.BadInput`` too.

    Workers report the type as they see it (a qualified class name, an error code);
    operators write the short name.
    """
    return actual == wanted or actual.rpartition(".")[2] == wanted


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "max_attempts": int,
    "initial_backoff_ms": int,
    "backoff_coefficient": (int, float),
    "max_backoff_ms": int,
    "jitter": (int, float),
}


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How failed attempts of a job are retried; mirrors io.jobstream.RetryPolicy."""

    max_attempts: int = 3
    """Attempts in all, the first included; 1 means never retry."""
    initial_backoff_ms: int = 1000
    """Delay before the first retry."""
    backoff_coefficient: float = 2.0
    """Factor applied to the delay after each retry; 1 keeps it constant."""
    max_backoff_ms: int = 300_000
    """Cap on any one delay; at least ``initial_backoff_ms``."""
    jitter: float = 0.1
    """Fraction of the delay that may be taken off it, drawn from the execution id."""
    non_retryable_errors: tuple[str, ...] = ()
    """Error types that go straight to the dead-letter topic, matched on the full type
    name or its last dotted part (``BadInput`` matches ``app.errors.BadInput``)."""

    def __post_init__(self) -> None:
        if isinstance(self.non_retryable_errors, str):  # one name, not its characters
            object.__setattr__(self, "non_retryable_errors", (self.non_retryable_errors,))
        object.__setattr__(self, "non_retryable_errors", tuple(self.non_retryable_errors))
        self._validate()

    def _validate(self) -> None:
        """The schema's types allow values no backoff can use: refuse them by field."""
        for name, kinds in _FIELD_TYPES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise ValidationError(f"retry.{name}", f"must be a number, not {value!r}")
        if not all(isinstance(t, str) for t in self.non_retryable_errors):
            raise ValidationError("retry.non_retryable_errors", "must be a list of type names")
        if self.max_attempts < 1:
            raise ValidationError("retry.max_attempts", "must be at least 1")
        if self.initial_backoff_ms < 1:
            raise ValidationError("retry.initial_backoff_ms", "must be positive")
        if not self.backoff_coefficient >= 1.0:  # also refuses NaN
            raise ValidationError("retry.backoff_coefficient", "must be at least 1")
        if self.max_backoff_ms < self.initial_backoff_ms:
            raise ValidationError(
                "retry.max_backoff_ms",
                f"must be at least initial_backoff_ms ({self.initial_backoff_ms})",
            )
        if not 0.0 <= self.jitter <= 1.0:
            raise ValidationError("retry.jitter", "must be within [0, 1]")

    @classmethod
    def from_avro(cls, record: Mapping[str, Any]) -> RetryPolicy:
        """The policy of a RetryPolicy record (or any subset of its fields)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(record) - known)
        if unknown:
            raise ValidationError(f"retry.{unknown[0]}", "is not a field of RetryPolicy")
        return cls(**record)

    def to_avro(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "non_retryable_errors": list(self.non_retryable_errors)
        }

    def is_non_retryable(self, error_type: str) -> bool:
        return any(error_type_matches(error_type, name) for name in self.non_retryable_errors)

    def backoff_ms(self, attempt: int, seed: str) -> int:
        """The delay after attempt ``attempt`` failed; see :func:`compute_backoff`."""
        return compute_backoff(
            attempt,
            initial_ms=self.initial_backoff_ms,
            coefficient=self.backoff_coefficient,
            max_ms=self.max_backoff_ms,
            jitter=self.jitter,
            seed=seed,
        )


@dataclass(frozen=True)
class RetryDefaults:
    """The policy of each job type that does not bring its own."""

    default: RetryPolicy = field(default_factory=RetryPolicy)
    """For every type without an entry of its own."""
    by_type: Mapping[str, RetryPolicy] = field(default_factory=dict)

    def for_type(self, job_type: str) -> RetryPolicy:
        return self.by_type.get(job_type, self.default)

    def policy_for(self, spec: Mapping[str, Any]) -> RetryPolicy:
        """``spec.retry`` when set, else the type's default; ValidationError if it is bad."""
        own = spec.get("retry")
        if own is not None:
            return RetryPolicy.from_avro(own)
        return self.for_type(str(spec.get("job_type", "")))

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Mapping[str, Any]]) -> RetryDefaults:
        """Per-type field overrides on top of the default; key ``*`` changes the default."""
        base = RetryPolicy()
        if GLOBAL_KEY in overrides:
            base = _override(base, GLOBAL_KEY, overrides[GLOBAL_KEY])
        by_type = {
            job_type: _override(base, job_type, changes)
            for job_type, changes in overrides.items()
            if job_type != GLOBAL_KEY
        }
        return cls(default=base, by_type=by_type)


def _override(base: RetryPolicy, job_type: str, changes: Mapping[str, Any]) -> RetryPolicy:
    known = {f.name for f in fields(RetryPolicy)}
    try:
        if not isinstance(changes, Mapping):
            raise TypeError("expected an object of RetryPolicy fields")
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValidationError(f"retry.{unknown[0]}", "is not a field of RetryPolicy")
        return replace(base, **changes)
    except (ValidationError, TypeError) as exc:
        raise ConfigurationError(f"invalid setting: {DEFAULTS_ENV}: {job_type}: {exc}") from exc


# -- the decision ------------------------------------------------------------------------


@dataclass(frozen=True)
class Retry:
    """Run attempt ``attempt`` at ``retry_at_ms``."""

    attempt: int
    retry_at_ms: int
    delay_ms: int
    errors: list[dict[str, Any]]
    """Every attempt's error so far, oldest first."""


@dataclass(frozen=True)
class DeadLetter:
    """Stop: the job goes to its dead-letter topic."""

    reason: str
    attempts: int
    errors: list[dict[str, Any]]


def failure_error(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event's ErrorInfo, or one that says what the kind of failure implies."""
    execution = event["execution"]
    if event.get("error") is not None:
        return dict(event["error"])
    error_type, message = IMPLIED_ERRORS.get(event.get("kind", ""), _UNREPORTED_ERROR)
    return {
        "attempt": execution["attempt"],
        "error_type": error_type,
        "message": message,
        "traceback": None,
        "retryable": True,
        "at_ms": event["at_ms"],
        "worker_id": event.get("worker_id"),
    }


def decide(event: Mapping[str, Any], policy: RetryPolicy, now_ms: int) -> Retry | DeadLetter:
    """Retry the failed attempt of ``event`` after its backoff, or dead-letter the job.

    ``now_ms`` is the instant the delay counts from; the router passes the failure's own
    ``at_ms`` so that replaying the same event decides the same retry time. Rules, in order:
    an error marked not retryable, or whose type the policy lists, is dead-lettered
    (``non_retryable``); so is the failure of attempt ``max_attempts`` (``exhausted``);
    anything else is retried with attempt + 1.
    """
    execution = event.get("execution")
    if execution is None:
        raise ValueError("a failure without its execution cannot be routed")
    error = failure_error(event)
    errors = [*execution.get("errors", []), error]
    attempt = int(execution["attempt"])
    if not error.get("retryable", True) or policy.is_non_retryable(error["error_type"]):
        return DeadLetter(NON_RETRYABLE, attempt, errors)
    if attempt >= policy.max_attempts:
        return DeadLetter(EXHAUSTED, attempt, errors)
    delay = policy.backoff_ms(attempt, seed=execution["execution_id"])
    return Retry(attempt + 1, now_ms + delay, delay, errors)
