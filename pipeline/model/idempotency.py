"""Job ids chosen at submission.

Two kinds of job id, both 26 Crockford base32 characters:

- A ULID (:func:`jobstream._pipeline.scheduling.new_job_id`): time-sortable, first character
``0``-``7``.
- With an idempotency key, a *deterministic* id, :func:`idempotent_job_id`: ``K`` then 25
  characters of a hash of (owner, key). Every resubmission carries the same id, so it lands on
  the same partition and the timer processor drops it as a duplicate by job id; no lookup table
  of keys is needed anywhere. The price: such ids carry no time (a ULID's first character is
  at most ``7``, so ``K`` marks them and ``job_id_time_ms`` refuses them), they sort after
  every ULID rather than by creation, and a key stays bound to its first job for as long as
  the timer state remembers that job.

The partition key of a job's records is its workflow id or its job id:
:func:`jobstream._pipeline.partitioning.partition_key`.
"""

from __future__ import annotations

import hashlib
from typing import TypeGuard

from jobstream._pipeline.scheduling.ids import ALPHABET, ID_LENGTH

IDEMPOTENT_PREFIX = "K"
"""First character of a deterministic id; never the first character of a ULID (0-7)."""

_HASH_CHARS = ID_LENGTH - len(IDEMPOTENT_PREFIX)
_DIGEST_BITS = 128


def idempotent_job_id(owner: str, idempotency_key: str) -> str:
    """``K`` + the top 125 bits of blake2b-128(owner NUL key), as 25 Crockford base32 digits.

    Owner is part of the hash so two tenants using the same key get different jobs. Any
    client can compute it (docs/submitting.md shows how), and must: the timer processor
    refuses a submission whose key and id do not match, since the key would then dedupe
    nothing.
    """
    digest = hashlib.blake2b(f"{owner}\x00{idempotency_key}".encode(), digest_size=16).digest()
    value = int.from_bytes(digest, "big") >> (_DIGEST_BITS - 5 * _HASH_CHARS)
    return IDEMPOTENT_PREFIX + "".join(
        ALPHABET[(value >> shift) & 31] for shift in range(5 * (_HASH_CHARS - 1), -1, -5)
    )


def is_job_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` has the shape of a job id (either kind): 26 upper-case base32 chars."""
    # strip() removes every alphabet character from both ends: nothing is left iff all are.
    return isinstance(value, str) and len(value) == ID_LENGTH and not value.strip(ALPHABET)
