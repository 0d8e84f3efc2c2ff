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

import msgspec

from jobstream._pipeline.errors import ConfigurationError, ValidationError
from jobstream._pipeline.model.backoff import compute_backoff
from jobstream._pipeline.model.lifecycle import IMPLIED_ERRORS
from jobstream._pipeline.model.records import ErrorInfo, JobLifecycle, JobSpec, RetryPolicyRecord

log = logging.getLogger(__name__)

EXHAUSTED = "exhausted"
"""DeadLettered.reason: the last allowed attempt failed."""
NON_RETRYABLE = "non_retryable"
"""DeadLettered.reason: the error says another attempt cannot help."""

DEFAULTS_ENV = "JOBSTREAM_RETRY_DEFAULTS"
GLOBAL_KEY = "*"
"""In JOBSTREAM_RETRY_DEFAULTS, the entry that changes the default of every type."""

PolicyOverrides = Mapping[str, object]
"""Some of RetryPolicy's fields by name, as configuration gives them (JSON values): one
entry of JOBSTREAM_RETRY_DEFAULTS. Configuration, not a record: checked by name and by the
policy's rules."""

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
    def from_avro(cls, record: RetryPolicyRecord) -> RetryPolicy:
        """The policy of a RetryPolicy record; ValidationError if its values break a rule."""
        return cls(**msgspec.structs.asdict(record))

    def to_avro(self) -> RetryPolicyRecord:
        """The RetryPolicy record of this policy, as a JobSpec carries it."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return RetryPolicyRecord(
            **values | {"non_retryable_errors": list(self.non_retryable_errors)}
        )

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

    def policy_for(self, spec: JobSpec) -> RetryPolicy:
        """``spec.retry`` when set, else the type's default; ValidationError if it is bad."""
        if spec.retry is not None:
            return RetryPolicy.from_avro(spec.retry)
        return self.for_type(spec.job_type)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, PolicyOverrides]) -> RetryDefaults:
        """Per-type field overrides on top of the default; key ``*`` changes the default.

        ``overrides`` is configuration (JOBSTREAM_RETRY_DEFAULTS), not a record.
        """
        base = RetryPolicy()
        if GLOBAL_KEY in overrides:
            base = _override(base, GLOBAL_KEY, overrides[GLOBAL_KEY])
        by_type = {
            job_type: _override(base, job_type, changes)
            for job_type, changes in overrides.items()
            if job_type != GLOBAL_KEY
        }
        return cls(default=base, by_type=by_type)


def _override(base: RetryPolicy, job_type: str, changes: PolicyOverrides) -> RetryPolicy:
    known = {f.name for f in fields(RetryPolicy)}
    try:
        if not isinstance(changes, Mapping):
            raise TypeError("expected an object of RetryPolicy fields")
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValidationError(f"retry.{unknown[0]}", "is not a field of RetryPolicy")
        # JSON values of any type: the policy's own rules refuse the wrong ones by field.
        return replace(base, **changes)  # type: ignore[arg-type]
    except (ValidationError, TypeError) as exc:
        raise ConfigurationError(f"invalid setting: {DEFAULTS_ENV}: {job_type}: {exc}") from exc


# -- the decision ------------------------------------------------------------------------


@dataclass(frozen=True)
class Retry:
    """Run attempt ``attempt`` at ``retry_at_ms``."""

    attempt: int
    retry_at_ms: int
    delay_ms: int
    errors: list[ErrorInfo]
    """Every attempt's error so far, oldest first."""


@dataclass(frozen=True)
class DeadLetter:
    """Stop: the job goes to its dead-letter topic."""

    reason: str
    attempts: int
    errors: list[ErrorInfo]


def failure_error(event: JobLifecycle) -> ErrorInfo:
    """The event's ErrorInfo, or one that says what the kind of failure implies.

    ValueError for an event without its ``execution``: the attempt is the execution's.
    """
    if event.error is not None:
        return event.error
    if event.execution is None:
        raise ValueError("a failure without its execution cannot be routed")
    error_type, message = IMPLIED_ERRORS.get(event.kind, _UNREPORTED_ERROR)
    return ErrorInfo(attempt=event.execution.attempt, error_type=error_type, message=message,
                     traceback=None, retryable=True, at_ms=event.at_ms,
                     worker_id=event.worker_id)  # fmt: skip


def decide(event: JobLifecycle, policy: RetryPolicy, now_ms: int) -> Retry | DeadLetter:
    """Retry the failed attempt of ``event`` after its backoff, or dead-letter the job.

    ``now_ms`` is the instant the delay counts from; the router passes the failure's own
    ``at_ms`` so that replaying the same event decides the same retry time. Rules, in order:
    an error marked not retryable, or whose type the policy lists, is dead-lettered
    (``non_retryable``); so is the failure of attempt ``max_attempts`` (``exhausted``);
    anything else is retried with attempt + 1.
    """
    execution = event.execution
    if execution is None:
        raise ValueError("a failure without its execution cannot be routed")
    error = failure_error(event)
    errors = [*execution.errors, error]
    attempt = execution.attempt
    if not error.retryable or policy.is_non_retryable(error.error_type):
        return DeadLetter(NON_RETRYABLE, attempt, errors)
    if attempt >= policy.max_attempts:
        return DeadLetter(EXHAUSTED, attempt, errors)
    delay = policy.backoff_ms(attempt, seed=execution.execution_id)
    return Retry(attempt + 1, now_ms + delay, delay, errors)
