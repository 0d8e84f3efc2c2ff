"""Job ids and execution ids.

A job id is a ULID: a 48-bit millisecond timestamp then 80 random bits, written as 26 Crockford
base32 characters (``0-9A-Z`` without I, L, O, U). The timestamp comes first and the alphabet is
in ASCII order, so comparing ids as strings (or as their UTF-8 bytes, as a RocksDB key) compares
creation times. Within one millisecond in one process each id is the previous one plus 1 in
its random part, so ids made in that millisecond also sort in the order they were made. Across
milliseconds the timestamp decides: if the clock steps back, later ids sort before earlier ones
(time order wins over generation order; the id keeps saying when it was made).

An execution id is derived, not random, so a replayed timer or retry router produces the same
id and the worker's idempotency check recognises the duplicate.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time

from jobstream._pipeline.errors import ValidationError

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""Crockford base32, in ASCII order."""

ID_LENGTH = 26
_TIME_CHARS = 10
_RANDOM_BITS = 80
_MAX_MS = (1 << 48) - 1
_DECODE = {char: value for value, char in enumerate(ALPHABET)}


class _Monotonic:
    """The last (ms, random) handed out, shared by every thread of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ms = -1
        self._random = 0

    def next(self, now_ms: int | None) -> int:
        with self._lock:
            # The clock is read under the lock: read outside, a thread could write an older
            # millisecond over a newer one and the next id in that newer one would start afresh.
            ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
            if not 0 <= ms <= _MAX_MS:
                raise ValueError(f"timestamp out of the 48-bit range: {ms}")
            if ms == self._ms:
                self._random += 1
                if self._random >> _RANDOM_BITS:
                    # 2**80 minus a uniform start: unreachable in one millisecond in practice.
                    raise OverflowError("ULID random part exhausted within one millisecond")
            else:
                self._ms = ms
                self._random = secrets.randbits(_RANDOM_BITS)
            return (ms << _RANDOM_BITS) | self._random


_STATE = _Monotonic()


_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET.encode())
"""RFC 4648 base32's alphabet to Crockford's, value for value."""


def new_job_id(now_ms: int | None = None) -> str:
    """A new unique, time-sortable job id for ``now_ms`` (default: the wall clock)."""
    # The 26 characters are the 130-bit value in 5-bit groups: shifted to the top of 160
    # bits, they are the first 26 characters of its RFC 4648 base32 (C, not a Python loop
    # per character: the API makes a thousand ids per batch request).
    value = _STATE.next(now_ms)
    encoded = base64.b32encode((value << 30).to_bytes(20, "big"))
    return encoded[:ID_LENGTH].translate(_TO_CROCKFORD).decode()


def job_id_time_ms(job_id: str) -> int:
    """The creation instant (epoch ms) a job id carries; ValidationError if it is not one."""
    if len(job_id) != ID_LENGTH or any(char not in _DECODE for char in job_id):
        raise ValidationError("job_id", f"not a {ID_LENGTH}-character Crockford base32 id")
    if _DECODE[job_id[0]] > 7:
        raise ValidationError("job_id", "timestamp out of the 48-bit range")
    ms = 0
    for char in job_id[:_TIME_CHARS]:
        ms = (ms << 5) | _DECODE[char]
    return ms


def execution_id(job_id: str, attempt: int, fire_at_ms: int) -> str:
    """``f"{job_id}:{fire_at_ms}:{attempt}"``: one id per firing and attempt, the same on replay.

    ``fire_at_ms`` is the scheduled (jittered) fire instant, not when the timer actually ran,
    which differs on replay. The firing comes before the attempt so the attempts of one
    firing sort together; job ids hold no ':' so the id splits back from the right.
    """
    if attempt < 1:
        raise ValueError("attempt starts at 1")
    if fire_at_ms < 0:
        raise ValueError("fire_at_ms must be >= 0")
    return f"{job_id}:{fire_at_ms}:{attempt}"


def parse_execution_id(value: str) -> tuple[str, int, int]:
    """The (job_id, fire_at_ms, attempt) an execution id was made from."""
    try:
        job_id, due_at, attempt = value.rsplit(":", 2)
        return job_id, int(due_at), int(attempt)
    except ValueError:
        raise ValidationError("execution_id", f"not an execution id: {value!r}") from None


def scheduled_ms_of(execution_id: str | None) -> int | None:
    """The due instant an execution id carries; None when it is not one."""
    if not execution_id:
        return None
    try:
        return parse_execution_id(execution_id)[1]
    except ValidationError:
        return None
