"""Where a retry is decided: backoff, retry policies, and the router on jobs.events.

The policy and the backoff are pure (:mod:`pipeline.retry.policy`,
:mod:`pipeline.retry.backoff`); :mod:`pipeline.retry.router` turns a failure into the
records that route it, and :mod:`pipeline.retry.runner` carries them in transactions.
"""

from pipeline.retry.backoff import compute_backoff
from pipeline.retry.policy import (
    EXHAUSTED,
    NON_RETRYABLE,
    DeadLetter,
    Retry,
    RetryDefaults,
    RetryPolicy,
    decide,
)
from pipeline.retry.router import FAILURE_KINDS, Output, RetryRouter, lifecycle_event

__all__ = [
    "EXHAUSTED",
    "FAILURE_KINDS",
    "NON_RETRYABLE",
    "DeadLetter",
    "Output",
    "Retry",
    "RetryDefaults",
    "RetryPolicy",
    "RetryRouter",
    "compute_backoff",
    "decide",
    "lifecycle_event",
]
