"""Failures on request, so the demo can show retries and the dead-letter topic.

Every demo handler calls :func:`inject_faults` first. Two parameters drive it:

- ``{"fail_until_attempt": n}``: attempts ``1 .. n-1`` raise :class:`TransientDemoError`
  and attempt ``n`` runs normally. Attempts count from 1, so ``n = 3`` fails twice then
  succeeds, which fits the default retry policy (3 attempts in all).
- ``{"poison": true}``: every attempt raises :class:`PoisonDemoError`. It is retryable
  on purpose, so the job uses up its attempts and the retry router dead-letters it,
  the path a real poison message takes (a non-retryable error would skip the retries).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from jobstream._pipeline.errors import JobstreamError, NonRetryableError

logger = logging.getLogger(__name__)

FAIL_UNTIL_ATTEMPT = "fail_until_attempt"
POISON = "poison"


class TransientDemoError(JobstreamError):
    """A failure another attempt fixes (``fail_until_attempt``)."""

    retryable = True


class PoisonDemoError(JobstreamError):
    """A failure every attempt repeats (``poison``); retryable so the retries run out."""

    retryable = True


def inject_faults(params: Mapping[str, Any], attempt: int) -> None:
    """Raise the failure ``params`` ask for at this ``attempt``; return when there is none.

    A malformed fault parameter raises :class:`NonRetryableError` naming it: retrying
    a job whose parameters are wrong cannot help.
    """
    poison = params.get(POISON, False)
    if not isinstance(poison, bool):
        raise NonRetryableError(f"params.{POISON}: expected true or false, got {poison!r}")
    if poison:
        logger.info("poison job fails at attempt %d", attempt)
        raise PoisonDemoError(f"poison job: attempt {attempt} fails, as every attempt does")
    until = params.get(FAIL_UNTIL_ATTEMPT)
    if until is None:
        return
    if isinstance(until, bool) or not isinstance(until, int) or until < 1:
        raise NonRetryableError(
            f"params.{FAIL_UNTIL_ATTEMPT}: expected an integer >= 1, got {until!r}"
        )
    if attempt < until:
        logger.info("demo job fails at attempt %d (succeeds from attempt %d)", attempt, until)
        raise TransientDemoError(
            f"transient demo failure: attempt {attempt}, succeeds from attempt {until}"
        )
