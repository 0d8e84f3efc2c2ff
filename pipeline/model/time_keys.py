"""Keys of the RocksDB timer store, encoded so that byte order is the order timers fire in.

Four key spaces, told apart by their first byte (the store keeps its own metadata under
``0x00`` keys, pipeline/state/store.py; a workflow's nodes and records have theirs,
pipeline/timers/nodes.py):

- schedule ``b"s" | due minute (u64 BE) | due ms (u64 BE) | job id (UTF-8)``: one entry per
  pending fire. Big-endian fixed-width integers compare like the numbers, and the minute comes
  from the ms, so byte order is (due_ms, job_id) order (UTF-8 preserves code point order).
  The leading minute lets a scan seek to a minute bucket without knowing exact instants.
- index ``b"j" | timer id``: the timer's entry (pipeline/timers/entry.py), which says where it
  is scheduled, for cancel and update.
- owner schedule ``b"o" | owner length (u16 BE) | owner (UTF-8) | due ms (u64 BE) | job id``:
  the same firings again, one range per owner, so that fair firing (``TimerLogic.due_batch``,
  pipeline/timers/logic.py) can take each owner's due timers in turn. The length prefix
  makes one owner's keys one range whatever characters the owner holds.
- held ``b"q" | limit id length (u16 BE) | limit id (UTF-8) | due ms (u64 BE) | job id``: jobs
  a rate limit holds back, one queue per limit in fire-time order (pipeline/limits/). A held
  job has no schedule key: it leaves its queue when the limit's tokens allow.

A due scan iterates from the partition's floor, a schedule key below which none is live
(``SCHEDULE_LOWER_BOUND`` when none is known; pipeline/timers/state.py keeps it), to
``due_upper_bound(now_ms)`` (exclusive).
The store must compare raw bytes (rocksdict ``Options(raw_mode=True)``): in its default mode
rocksdict tags each key with its Python type and these bounds no longer apply.
"""

from __future__ import annotations

import struct

SCHEDULE_PREFIX = b"s"
INDEX_PREFIX = b"j"
SCHEDULE_LOWER_BOUND = SCHEDULE_PREFIX
"""Inclusive lower bound of every schedule key."""
SCHEDULE_UPPER_BOUND = b"t"
"""Exclusive upper bound of every schedule key."""

MINUTE_MS = 60_000
_DUE = struct.Struct(">QQ")
_HEADER = len(SCHEDULE_PREFIX) + _DUE.size
_MAX_U64 = (1 << 64) - 1

OWNER_PREFIX = b"o"
OWNER_UPPER_BOUND = b"p"
"""Exclusive upper bound of every owner schedule key."""
_OWNER_LENGTH = struct.Struct(">H")
_MS = struct.Struct(">Q")
_AFTER_OWNER = b"\xff" * (_MS.size + 1)
"""Sorts after every (due ms, job id) of one owner: a job id never starts with 0xff."""


def _check(due_ms: int, job_id: str) -> None:
    """ValueError unless ``job_id`` is not empty and ``due_ms`` fits in a u64."""
    if not job_id:
        raise ValueError("job_id must not be empty")
    if not 0 <= due_ms <= _MAX_U64:
        raise ValueError(f"due_ms out of range: {due_ms}")


def encode_schedule_key(due_ms: int, job_id: str) -> bytes:
    """The schedule key of ``job_id`` firing at ``due_ms`` (epoch ms, >= 0)."""
    _check(due_ms, job_id)
    return SCHEDULE_PREFIX + _DUE.pack(due_ms // MINUTE_MS, due_ms) + job_id.encode()


def decode_schedule_key(key: bytes) -> tuple[int, str]:
    """(due_ms, job_id) of a schedule key; ValueError if ``key`` is not one."""
    if len(key) <= _HEADER or not key.startswith(SCHEDULE_PREFIX):
        raise ValueError(f"not a schedule key: {key!r}")
    minute, due_ms = _DUE.unpack_from(key, len(SCHEDULE_PREFIX))
    if minute != due_ms // MINUTE_MS:
        raise ValueError(f"schedule key minute does not match its ms: {key!r}")
    return due_ms, key[_HEADER:].decode()


def due_upper_bound(now_ms: int) -> bytes:
    """Exclusive upper bound: schedule keys below it are exactly those with due_ms <= now_ms.

    It is the header of ``now_ms + 1`` with no job id, so it sorts before every key firing at
    ``now_ms + 1`` (those have a non-empty job id after the same header) and after every key
    firing earlier.
    """
    if now_ms < 0:
        raise ValueError(f"now_ms must be >= 0: {now_ms}")
    if now_ms >= _MAX_U64:
        return SCHEDULE_UPPER_BOUND
    return schedule_floor(now_ms + 1)


def schedule_floor(due_ms: int) -> bytes:
    """Inclusive lower bound: schedule keys at or above it are those with due_ms >= ``due_ms``
    (the header of ``due_ms`` with no job id)."""
    return SCHEDULE_PREFIX + _DUE.pack(due_ms // MINUTE_MS, due_ms)


def encode_index_key(job_id: str) -> bytes:
    """The index key of ``job_id``."""
    if not job_id:
        raise ValueError("job_id must not be empty")
    return INDEX_PREFIX + job_id.encode()


def owner_range_start(owner: str) -> bytes:
    """The first possible owner schedule key of ``owner``."""
    raw = owner.encode()
    return OWNER_PREFIX + _OWNER_LENGTH.pack(len(raw)) + raw


def owner_range_end(owner: str) -> bytes:
    """Exclusive upper bound of every owner schedule key of ``owner``."""
    return owner_range_start(owner) + _AFTER_OWNER


def owner_due_bound(owner: str, now_ms: int) -> bytes:
    """Exclusive upper bound of the keys of ``owner`` firing at or before ``now_ms``."""
    return owner_range_start(owner) + _MS.pack(min(now_ms + 1, _MAX_U64))


def encode_owner_schedule_key(owner: str, due_ms: int, job_id: str) -> bytes:
    """The owner schedule key of ``job_id`` of ``owner`` firing at ``due_ms``."""
    _check(due_ms, job_id)
    return owner_range_start(owner) + _MS.pack(due_ms) + job_id.encode()


def decode_owner_schedule_key(key: bytes) -> tuple[str, int, str]:
    """(owner, due_ms, job_id) of an owner schedule key; ValueError if it is not one."""
    if not key.startswith(OWNER_PREFIX) or len(key) < 1 + _OWNER_LENGTH.size:
        raise ValueError(f"not an owner schedule key: {key!r}")
    (length,) = _OWNER_LENGTH.unpack_from(key, 1)
    start = 1 + _OWNER_LENGTH.size
    due_at = start + length
    if len(key) <= due_at + _MS.size:
        raise ValueError(f"not an owner schedule key: {key!r}")
    (due_ms,) = _MS.unpack_from(key, due_at)
    return key[start:due_at].decode(), due_ms, key[due_at + _MS.size :].decode()


HELD_PREFIX = b"q"
HELD_UPPER_BOUND = b"r"
"""Exclusive upper bound of every held key."""


def held_range_start(limit_id: str) -> bytes:
    """The first possible held key of the queue of ``limit_id``."""
    raw = limit_id.encode()
    return HELD_PREFIX + _OWNER_LENGTH.pack(len(raw)) + raw


def held_range_end(limit_id: str) -> bytes:
    """Exclusive upper bound of the held keys of ``limit_id``."""
    return held_range_start(limit_id) + _AFTER_OWNER


def encode_held_key(limit_id: str, due_ms: int, job_id: str) -> bytes:
    """The held key of ``job_id``, due at ``due_ms``, in the queue of ``limit_id``."""
    _check(due_ms, job_id)
    return held_range_start(limit_id) + _MS.pack(due_ms) + job_id.encode()


def decode_held_key(key: bytes) -> tuple[str, int, str]:
    """(limit id, due_ms, job_id) of a held key; ValueError if it is not one."""
    if not key.startswith(HELD_PREFIX):
        raise ValueError(f"not a held key: {key!r}")
    return decode_owner_schedule_key(OWNER_PREFIX + key[len(HELD_PREFIX) :])
