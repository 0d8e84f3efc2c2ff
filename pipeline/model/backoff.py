"""How long a failed attempt waits: exponential backoff, capped, with deterministic jitter.

Pure, so the router, its tests and an operator reading a job's history all compute the
same delay. Jitter spreads retries of jobs that failed together (a dependency that went
down) so they do not come back in one burst; it is drawn from a hash of a seed (the
failed execution's id) rather than a random generator, so replaying jobs.events decides
the same delay, and a retry's time can be explained after the fact.
"""

from __future__ import annotations

import hashlib
import math

_HASH_BYTES = 8
_HASH_RANGE = float(1 << (8 * _HASH_BYTES))


def jitter_fraction(seed: str) -> float:
    """A number in [0, 1) that depends only on ``seed``: blake2b-64 of it, scaled."""
    digest = hashlib.blake2b(seed.encode(), digest_size=_HASH_BYTES).digest()
    return int.from_bytes(digest, "big") / _HASH_RANGE


def compute_backoff(
    attempt: int,
    *,
    initial_ms: int,
    coefficient: float,
    max_ms: int,
    jitter: float,
    seed: str,
) -> int:
    """The delay (ms) before attempt ``attempt + 1``, after attempt ``attempt`` failed.

    ``min(max_ms, initial_ms * coefficient ** (attempt - 1))``, less up to ``jitter`` of
    itself. Jitter only ever shortens the delay, so ``max_ms`` stays a true cap and the
    un-jittered delay an upper bound: ``(1 - jitter) * d <= delay <= d``.
    """
    if attempt < 1:
        raise ValueError(f"attempt starts at 1, got {attempt}")
    if initial_ms < 0 or max_ms < 0:
        raise ValueError("initial_ms and max_ms must not be negative")
    if not 0.0 <= jitter <= 1.0:
        raise ValueError(f"jitter must be within [0, 1], got {jitter}")
    base = min(initial_ms, max_ms)
    if attempt > 1 and coefficient > 1.0 and 0 < initial_ms < max_ms:
        # Compare in logarithms first: coefficient ** (attempt - 1) overflows a float
        # long before attempt reaches the largest int the schema allows.
        if (attempt - 1) * math.log(coefficient) >= math.log(max_ms / initial_ms):
            base = max_ms
        else:
            base = min(max_ms, round(initial_ms * coefficient ** (attempt - 1)))
    return base - int(base * jitter * jitter_fraction(seed))
