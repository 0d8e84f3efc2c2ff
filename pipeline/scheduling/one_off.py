"""The due instant of a one-off job, and what happens when it is out of range.

The rule, with ``now`` the instant the submission is accepted:

- ``run_at_ms`` is None: fire now.
- In the future, at most ``max_future_ms`` ahead (default about 10 years): fire then.
- In the past, at most ``max_past_ms`` ago (default 7 days): kept as is. It is already due, so
  the timer fires it at its next poll, and ``scheduled_at_ms`` keeps the instant the client asked
  for so the lateness shows (a client retrying a submission after an outage still gets its run).
- Further in the past, or further in the future: rejected with a ValidationError naming
  ``spec.run_at_ms`` (a clock or unit mistake, seconds for milliseconds, is far likelier than
  intent; firing such a job silently would hide it).
"""

from __future__ import annotations

from jobstream._pipeline.errors import ValidationError

FIELD = "spec.run_at_ms"

DAY_MS = 86_400_000
DEFAULT_MAX_PAST_MS = 7 * DAY_MS
DEFAULT_MAX_FUTURE_MS = 3653 * DAY_MS
"""Ten years, leap days included."""


def normalize_fire_time(
    run_at_ms: int | None,
    *,
    now_ms: int,
    max_past_ms: int = DEFAULT_MAX_PAST_MS,
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS,
) -> int:
    """The instant a one-off job is scheduled at; raises ValidationError when out of range.

    Both bounds are inclusive: ``now_ms - max_past_ms`` and ``now_ms + max_future_ms`` are
    accepted.
    """
    if max_past_ms < 0 or max_future_ms < 0:
        raise ValueError("max_past_ms and max_future_ms must be >= 0")
    if run_at_ms is None:
        return now_ms
    if isinstance(run_at_ms, bool) or not isinstance(run_at_ms, int):
        raise ValidationError(FIELD, "must be epoch milliseconds (an integer) or null")
    if run_at_ms < now_ms - max_past_ms:
        raise ValidationError(
            FIELD, f"is more than {max_past_ms} ms in the past ({now_ms - run_at_ms} ms)"
        )
    if run_at_ms > now_ms + max_future_ms:
        raise ValidationError(
            FIELD, f"is more than {max_future_ms} ms in the future ({run_at_ms - now_ms} ms)"
        )
    return run_at_ms
