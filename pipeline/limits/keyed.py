"""Rate keys: a token bucket per key a job names (``keys={"rate": ...}``, docs/keys.md).

A job with a rate key fires at most at its ``rate`` among the jobs of its owner sharing the
key, across the timer fleet: each timer process enforces its share of the rate, as it does
for the limits on jobs.limits (pipeline/limits/throttle.py), and holds the rest in the
key's queue, in due order. The queue is named by :attr:`RateKey.id`, which starts with
:data:`RATE_KEY_PREFIX`, a control character no owner may start with, so it never meets a
:class:`~jobstream._pipeline.limits.model.LimitKey` id (``owner NUL type``).

Keys are many (one per customer, per file) and most are used a few times: a bucket that is
full is dropped when the buckets pass a bound, since a new bucket starts full anyway, so
only the keys used within the time their bucket takes to refill are kept in memory.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

from jobstream._pipeline.limits.bucket import TokenBucket
from jobstream._pipeline.limits.model import default_burst
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.keys import scoped
from jobstream._pipeline.model.records import JobKeys

log = logging.getLogger(__name__)

RATE_KEY_PREFIX = "\x01"
"""What a rate key's queue id starts with: no owner starts with a control character."""
SWEEP_AT_LEAST = 1024
"""Buckets kept before the full ones are first dropped; then twice what a sweep left."""


@dataclass(frozen=True, slots=True)
class RateKey:
    """A job's rate key, with its owner: whom its bucket paces."""

    owner: str
    key: str
    rate: float
    """Firings per second of the key, across every timer process (this job's rate)."""

    @property
    def id(self) -> str:
        """The name of the key's queue of held jobs (``held_by``)."""
        return RATE_KEY_PREFIX + scoped(self.owner, self.key)

    def __str__(self) -> str:
        return f"rate:{self.key}"


def rate_key(owner: str, keys: JobKeys | None) -> RateKey | None:
    """The job's rate key, if it has one; one whose rate cannot be read (it is checked at
    intake) paces nothing, and says so in the log."""
    if keys is None or keys.rate_key is None or keys.rate is None:
        return None
    try:
        return RateKey(owner, keys.rate_key, _per_second(keys.rate))
    except ValueError as exc:
        log.warning("rate key ignored: its rate %s", exc, extra={"rate_key": keys.rate_key})
        return None


_per_second = lru_cache(maxsize=1024)(rules.rate_per_second)
"""A rate's text read once: the same few rates are read at every firing."""


def is_rate_key_id(limit_id: str) -> bool:
    return limit_id.startswith(RATE_KEY_PREFIX)


class KeyBuckets:
    """One timer process's buckets of rate keys, bounded by dropping the full ones."""

    def __init__(self, sweep_at: int = SWEEP_AT_LEAST) -> None:
        self._buckets: dict[str, TokenBucket] = {}
        self._least = sweep_at
        self._sweep_at = sweep_at

    def bucket(self, key: RateKey, share: float, now_ms: int) -> TokenBucket:
        """The key's bucket at ``share`` of its rate and burst (at least one token)."""
        rate = key.rate * share
        capacity = max(1.0, default_burst(key.rate) * share)
        bucket = self._buckets.get(key.id)
        if bucket is None:
            if len(self._buckets) >= self._sweep_at:
                self.sweep(now_ms)
            bucket = self._buckets[key.id] = TokenBucket.full(rate, capacity, now_ms)
        elif bucket.rate != rate or bucket.capacity != capacity:
            bucket.rescale(rate, capacity, now_ms)
        return bucket

    def sweep(self, now_ms: int) -> None:
        """Drop the buckets that are full at ``now_ms``: a new one would be the same."""
        for key_id, bucket in list(self._buckets.items()):
            bucket.refill(now_ms)
            if bucket.tokens >= bucket.capacity:
                del self._buckets[key_id]
        self._sweep_at = max(self._least, 2 * len(self._buckets))

    def __len__(self) -> int:
        return len(self._buckets)
