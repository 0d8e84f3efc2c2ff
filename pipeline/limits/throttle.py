"""Which firings the limits allow now: one token bucket per limit, in one timer process.

A limit is for the whole fleet of timers. Jobs are spread over the timer partitions by
their key, so each process enforces the share of the limit that its partitions carry:
``rate * owned / partitions`` per second, with the burst scaled alike (at least one
token). docs/limits.md says what error that split brings.

The limits themselves come from a :class:`LimitBoard` that the jobs.limits follower
replaces as records arrive (pipeline/limits/topic.py), so a change applies at the next
firing. Bucket levels live in memory: a restarted process starts its buckets full.

A job's own rate key (pipeline/limits/keyed.py) is one more bucket it must have a token
of, split the same way, its queue named by :attr:`RateKey.id`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from jobstream._pipeline.limits.bucket import TokenBucket
from jobstream._pipeline.limits.keyed import KeyBuckets, RateKey, rate_key
from jobstream._pipeline.limits.model import Limit, LimitKey, keys_of
from jobstream._pipeline.model.records import JobKeys


class LimitBoard:
    """The limits in force, replaced whole by the follower, read by the firing thread."""

    def __init__(self, limits: Iterable[Limit] = ()) -> None:
        self._limits: Mapping[LimitKey, Limit] = {limit.key: limit for limit in limits}
        self._lock = threading.Lock()
        self.ready = threading.Event()
        """Set once the limits are known (at once for a board with no follower): the
        timers fire nothing before."""
        self.ready.set()

    @property
    def limits(self) -> Mapping[LimitKey, Limit]:
        return self._limits

    def set(self, limit: Limit) -> None:
        with self._lock:
            self._limits = {**self._limits, limit.key: limit}

    def clear(self, key: LimitKey) -> None:
        with self._lock:
            self._limits = {k: v for k, v in self._limits.items() if k != key}


class Throttle:
    def __init__(self, board: LimitBoard | None = None) -> None:
        self.board = board or LimitBoard()
        self.share = 1.0
        """The part of every limit this process enforces: its share of the partitions."""
        self._buckets: dict[LimitKey, TokenBucket] = {}
        self.key_buckets = KeyBuckets()
        """The buckets of the jobs' own rate keys."""

    def set_share(self, owned: int, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, got {partitions}")
        self.share = max(owned, 1) / partitions

    def admit(self, owner: str, job_type: str, now_ms: int,
              keys: JobKeys | None = None) -> LimitKey | RateKey | None:  # fmt: skip
        """Take a token of every limit that applies to the job (its rate key's among them)
        and return None, or take none and return the limit that holds it back (the first
        one out of tokens)."""
        limits = self.board.limits
        rated = rate_key(owner, keys) if keys is not None else None
        if not limits and rated is None:
            return None
        buckets = []
        for key in keys_of(owner, job_type) if limits else ():
            limit = limits.get(key)
            if limit is None:
                continue
            bucket = self._bucket(limit, now_ms)
            if not bucket.available(now_ms):
                return key
            buckets.append(bucket)
        if rated is not None:
            bucket = self.key_buckets.bucket(rated, self.share, now_ms)
            if not bucket.available(now_ms):
                return rated
            buckets.append(bucket)
        for bucket in buckets:
            bucket.take(now_ms)
        return None

    def applies(self, owner: str, job_type: str, keys: JobKeys | None = None) -> bool:
        """Whether a limit applies to the job (its type's, its owner's, or both's, or its
        own rate key)."""
        if keys is not None and keys.rate_key is not None:
            return True
        limits = self.board.limits
        return bool(limits) and any(key in limits for key in keys_of(owner, job_type))

    def limited(self, key: LimitKey) -> bool:
        return key in self.board.limits

    def _bucket(self, limit: Limit, now_ms: int) -> TokenBucket:
        rate = limit.rate * self.share
        capacity = max(1.0, limit.burst * self.share)
        bucket = self._buckets.get(limit.key)
        if bucket is None:
            bucket = self._buckets[limit.key] = TokenBucket.full(rate, capacity, now_ms)
        elif bucket.rate != rate or bucket.capacity != capacity:
            bucket.rescale(rate, capacity, now_ms)
        return bucket
