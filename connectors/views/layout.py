"""Key encoding of the view store: sortable byte keys, one namespace per index.

Every key starts with a one-byte namespace and ``\\x00``. Text parts end with ``\\x00``
(owners hold no control characters, job types only ``[a-z0-9_.]``), so a prefix of whole
parts never matches a longer part by accident. An index key ends with the job's sort part:
``>Q`` of ``NEWEST - created_ms`` (so a forward scan meets the newest job first) and the
job id, whose 26 characters are fixed-width. Index values are empty: the job's document is
read from its ``j`` key. The id's bytes are inverted (``255 - b``) so that jobs of one
millisecond also come newest first.

| namespace | key | value |
|---|---|---|
| ``j`` | job id | the job's document (JSON) |
| ``p`` | job id | its parameters (JSON text, when small) |
| ``i`` | job id | where larger parameters are: jobs.intake partition ``>I``, offset ``>q`` |
| ``x`` | job id, fire ms ``>Q``, attempt ``>I`` | one execution (JSON) |
| ``z`` | job id | where its latest result is: jobs.results partition ``>I``, offset ``>q`` |
| ``Z`` | job id, fire ms ``>Q``, attempt ``>I`` | where that execution's result is (as ``z``) |
| ``g`` | job id, fire ms ``>Q``, attempt ``>I`` | where its log lines are on jobs.logs (as ``z``) |
| ``m`` | job id | the commands people gave the job, latest last (a JSON list) |
| ``e`` | job id | its event timeline, oldest first (a JSON list: views/timeline.py) |
| ``R`` | owner, ``>Q`` of ``NEWEST - created_ms``, kind, id | nothing: a schedule (below) |
| ``W`` | owner, workflow id | a recurring workflow's schedule (JSON: views/schedules.py) |
| ``w`` | worker id | the worker's latest heartbeat (JSON) |
| ``r`` | ended ms ``>Q``, job id | nothing: ended jobs by end, for retention |
| ``c`` | owner, job type, state | how many jobs are there ``>q`` (the dashboard's counts) |
| ``P`` | pool, job type, state | how many jobs of that pool are there ``>q`` (waiting for one) |
| ``f`` | workflow id, job id | nothing: the jobs of a workflow |
| ``a o O T t y s l L`` | see :data:`INDEXES` | nothing |
| ``\\x01`` | topic, partition ``>I`` | the next offset to read ``>q`` |
| ``\\x02`` | nothing | the layout's version (:data:`LAYOUT_VERSION`) |

A schedule's ``R`` entry is a recurring job's (kind ``j``, its job id) while it has not
ended, or a recurring workflow's (kind ``w``, its workflow id, of any length: last) until
its cancel.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling.ids import parse_execution_id

_Q = struct.Struct(">Q")
_I = struct.Struct(">I")
_OFFSET = struct.Struct(">q")
NEWEST = (1 << 63) - 1
"""``NEWEST - created_ms`` sorts newer jobs first."""
JOB_ID_LENGTH = 26
SORT_PART_LENGTH = 8 + JOB_ID_LENGTH

DOC, PARAMS, EXECUTION, WORKER, RETENTION = b"j\x00", b"p\x00", b"x\x00", b"w\x00", b"r\x00"
COMMANDS = b"m\x00"
TIMELINE = b"e\x00"
SCHEDULES, WORKFLOW_SCHEDULE = b"R\x00", b"W\x00"
PARAMS_AT = b"i\x00"
RESULT_AT, RUN_RESULT_AT = b"z\x00", b"Z\x00"
RUN_LOGS_AT = b"g\x00"
COUNT = b"c\x00"
POOL_COUNT = b"P\x00"
WORKFLOW = b"f\x00"
OFFSETS = b"\x01"
LAYOUT = b"\x02"
LAYOUT_VERSION = b"9"
"""Raised when the keys change meaning (2: the counters; 3: the workflow index and a
job's parents; 4: the counters by pool; 5: a job's commands; 6: where results are; 7: a
job's retry policy and timeout; 8: a job's event timeline and the schedules, recurring
jobs' and workflows'; 9: every jobs.status field); older files are rebuilt."""


def text(part: str) -> bytes:
    return part.encode() + b"\x00"


@dataclass(frozen=True)
class Index:
    """One secondary index: which filters it serves, in the order its key holds them."""

    namespace: bytes
    fields: tuple[str, ...]

    def prefix(self, values: Mapping[str, str]) -> bytes:
        return self.namespace + b"".join(text(values[name]) for name in self.fields)


INDEXES = (
    Index(b"a\x00", ()),
    Index(b"o\x00", ("owner",)),
    Index(b"O\x00", ("owner", "state")),
    Index(b"T\x00", ("owner", "job_type")),
    Index(b"L\x00", ("owner", "label")),
    Index(b"t\x00", ("job_type", "state")),
    Index(b"y\x00", ("job_type",)),
    Index(b"s\x00", ("state",)),
    Index(b"l\x00", ("label",)),
)
"""Every listing is a prefix scan of one of these; filters the chosen index does not hold
are checked on the documents it yields (:func:`choose_index`)."""


def choose_index(filters: Mapping[str, str]) -> Index:
    """The index holding the most of ``filters``' fields and no other field."""
    wanted = set(filters)
    usable = [index for index in INDEXES if set(index.fields) <= wanted]
    return max(usable, key=lambda index: len(index.fields))


_INVERT = bytes(255 - b for b in range(256))


def created_part(created_ms: int) -> bytes:
    """The first bytes of the sort part of every job created at ``created_ms``."""
    return _Q.pack(NEWEST - min(max(created_ms, -1), NEWEST))


def sort_part(created_ms: int, job_id: str) -> bytes:
    """Newest first; jobs of one millisecond by descending id (a ULID's order)."""
    return _Q.pack(NEWEST - max(created_ms, 0)) + job_id.encode().translate(_INVERT)


def job_id_of(index_key: bytes) -> str:
    return index_key[-JOB_ID_LENGTH:].translate(_INVERT).decode()


def labels_of(labels: Mapping[str, str]) -> list[str]:
    """``name=value`` of each label an index can hold (none with a NUL in it)."""
    return sorted(f"{k}={v}" for k, v in labels.items() if "\x00" not in k + v)


def index_keys(doc: Mapping[str, Any]) -> set[bytes]:
    """Every index entry of a job document (its ``j`` key aside)."""
    tail = sort_part(doc["created_at_ms"], doc["job_id"])
    base = {"owner": doc["owner"], "state": doc["state"], "job_type": doc["job_type"]}
    keys: set[bytes] = set()
    for index in INDEXES:
        if "label" in index.fields:
            for label in labels_of(doc.get("labels") or {}):
                keys.add(index.prefix({**base, "label": label}) + tail)
        else:
            keys.add(index.prefix(base) + tail)
    if doc.get("ended_at_ms") is not None:
        keys.add(retention_key(doc["ended_at_ms"], doc["job_id"]))
    if doc.get("workflow_id"):
        keys.add(workflow_prefix(doc["workflow_id"]) + doc["job_id"].encode())
    if (doc.get("schedule") or {}).get("cron") is not None and doc.get("ended_at_ms") is None:
        keys.add(schedule_key(doc["owner"], doc["created_at_ms"], SCHEDULE_JOB, doc["job_id"]))
    return keys


SCHEDULE_JOB, SCHEDULE_WORKFLOW = b"j", b"w"
"""The kinds of a schedule's ``R`` entry: a recurring job, a recurring workflow."""


def schedule_prefix(owner: str | None) -> bytes:
    """The schedules of ``owner``, or of every owner (by owner) when None."""
    return SCHEDULES if owner is None else SCHEDULES + text(owner)


def schedule_key(owner: str, created_ms: int, kind: bytes, schedule_id: str) -> bytes:
    """A schedule's entry: newest first within its owner's, then its kind and id."""
    return (schedule_prefix(owner) + _Q.pack(NEWEST - max(created_ms, 0)) + kind
            + schedule_id.encode())  # fmt: skip


def schedule_parts(key: bytes) -> tuple[str, bytes, str]:
    """(owner, kind, id) of a schedule's entry."""
    owner, _, rest = key[len(SCHEDULES):].partition(b"\x00")
    return owner.decode(), rest[8:9], rest[9:].decode()


def workflow_schedule_key(owner: str, workflow_id: str) -> bytes:
    return WORKFLOW_SCHEDULE + text(owner) + workflow_id.encode()


def timeline_key(job_id: str) -> bytes:
    return TIMELINE + job_id.encode()


def workflow_prefix(workflow_id: str) -> bytes:
    """The entries of a workflow's jobs: the prefix, then each job's id."""
    return WORKFLOW + text(workflow_id)


def doc_key(job_id: str) -> bytes:
    return DOC + job_id.encode()


def params_key(job_id: str) -> bytes:
    return PARAMS + job_id.encode()


def commands_key(job_id: str) -> bytes:
    return COMMANDS + job_id.encode()


def params_at_key(job_id: str) -> bytes:
    return PARAMS_AT + job_id.encode()


def encode_location(partition: int, offset: int) -> bytes:
    return _I.pack(partition) + _OFFSET.pack(offset)


def decode_location(raw: bytes) -> tuple[int, int]:
    """(partition, offset) of :func:`encode_location`."""
    return int(_I.unpack(raw[:4])[0]), int(_OFFSET.unpack(raw[4:])[0])


def execution_prefix(job_id: str) -> bytes:
    return EXECUTION + text(job_id)


def execution_key(job_id: str, execution_id: str) -> bytes:
    """Executions of a job sort by firing, then attempt; an id we cannot parse sorts last."""
    return execution_prefix(job_id) + _execution_part(execution_id)


def _execution_part(execution_id: str) -> bytes:
    try:
        _, due_ms, attempt = parse_execution_id(execution_id)
    except ValidationError:
        return b"\xff" + execution_id.encode()
    return _Q.pack(due_ms) + _I.pack(attempt)


def result_at_key(job_id: str) -> bytes:
    return RESULT_AT + job_id.encode()


def run_result_prefix(job_id: str) -> bytes:
    return RUN_RESULT_AT + text(job_id)


def run_result_key(job_id: str, execution_id: str) -> bytes:
    """Where an execution's result is; sorted as :func:`execution_key`."""
    return run_result_prefix(job_id) + _execution_part(execution_id)


def run_logs_prefix(job_id: str) -> bytes:
    return RUN_LOGS_AT + text(job_id)


def run_logs_key(job_id: str, execution_id: str) -> bytes:
    """Where an execution's log lines are; sorted as :func:`execution_key`."""
    return run_logs_prefix(job_id) + _execution_part(execution_id)


def worker_key(worker_id: str) -> bytes:
    return WORKER + worker_id.encode()


def retention_key(ended_ms: int, job_id: str) -> bytes:
    return RETENTION + _Q.pack(max(ended_ms, 0)) + job_id.encode()


def retention_upper(before_ms: int) -> bytes:
    return RETENTION + _Q.pack(max(before_ms, 0))


def count_key(doc: Mapping[str, Any]) -> bytes:
    """The counter a job document adds one to: its owner, type and state."""
    return COUNT + text(doc["owner"]) + text(doc["job_type"]) + text(doc["state"])


def count_prefix(owner: str | None) -> bytes:
    return COUNT if owner is None else COUNT + text(owner)


def count_parts(key: bytes) -> tuple[str, str, str]:
    """(owner, job type, state) of a counter's key."""
    owner, job_type, state, _ = key[len(COUNT):].split(b"\x00")
    return owner.decode(), job_type.decode(), state.decode()


def pool_count_key(doc: Mapping[str, Any]) -> bytes | None:
    """The counter a job document of a pool adds one to: its pool, type and state; None
    for a job that requires no pool."""
    pool = doc.get("pool")
    if pool is None:
        return None
    return POOL_COUNT + text(pool) + text(doc["job_type"]) + text(doc["state"])


def pool_count_parts(key: bytes) -> tuple[str, str, str]:
    """(pool, job type, state) of a pool counter's key."""
    pool, job_type, state, _ = key[len(POOL_COUNT):].split(b"\x00")
    return pool.decode(), job_type.decode(), state.decode()


def offset_key(topic: str, partition: int) -> bytes:
    return OFFSETS + text(topic) + _I.pack(partition)


def encode_offset(offset: int) -> bytes:
    return _OFFSET.pack(offset)


def decode_offset(raw: bytes) -> int:
    return int(_OFFSET.unpack(raw)[0])


def upper_bound(prefix: bytes) -> bytes:
    """The least key above every key starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b"\xff" * (len(prefix) + 1)
    return stripped[:-1] + bytes([stripped[-1] + 1])


def changed(old: Iterable[bytes], new: Iterable[bytes]) -> tuple[set[bytes], set[bytes]]:
    """(keys to delete, keys to put) to move from index entries ``old`` to ``new``."""
    before, after = set(old), set(new)
    return before - after, after - before


def encode_cursor(position: bytes) -> str:
    """A page's position (the key after its prefix) as the opaque text a client passes back."""
    return base64.urlsafe_b64encode(position).decode().rstrip("=")


def decode_cursor(cursor: str, fits: Callable[[bytes], bool]) -> bytes:
    """The position of a cursor :func:`encode_cursor` wrote; ValidationError naming
    ``cursor`` for text that is not one, or a position the listing could not have issued
    (``fits`` says)."""
    try:
        position = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_",
                                    validate=True)  # fmt: skip
    except (binascii.Error, ValueError):
        position = b""
    if not fits(position):
        raise ValidationError("cursor", "is not a cursor this API issued")
    return position
