"""Deterministic job ids for idempotency keys, and the partition key rule."""

from __future__ import annotations

import base64
import hashlib

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.idempotency import idempotent_job_id, is_job_id
from jobstream._pipeline.partitioning import partition_key
from jobstream._pipeline.scheduling import job_id_time_ms, new_job_id
from jobstream._pipeline.scheduling.ids import ALPHABET

RFC4648 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def crockford_b32(data: bytes) -> str:
    """Bit-stream base32 of ``data`` in Crockford's alphabet, via the standard library."""
    return base64.b32encode(data).decode().rstrip("=").translate(str.maketrans(RFC4648, ALPHABET))


def test_idempotent_id_is_k_and_the_first_25_crockford_chars_of_the_hash() -> None:
    digest = hashlib.blake2b(b"acme\x00nightly-2026-11-22", digest_size=16).digest()
    expected = "K" + crockford_b32(digest)[:25]
    assert idempotent_job_id("acme", "nightly-2026-11-22") == expected
    assert len(expected) == 26


def test_idempotent_id_is_stable_and_owner_scoped() -> None:
    first = idempotent_job_id("acme", "key-1")
    assert idempotent_job_id("acme", "key-1") == first
    assert idempotent_job_id("globex", "key-1") != first
    assert idempotent_job_id("acme", "key-2") != first


def test_idempotent_id_is_a_job_id_but_carries_no_time() -> None:
    job_id = idempotent_job_id("acme", "key-1")
    assert is_job_id(job_id)
    with pytest.raises(ValidationError) as refused:
        job_id_time_ms(job_id)
    assert refused.value.field == "job_id"
    # 'K' sorts after every ULID's first character (0-7): these ids sort after all ULIDs.
    assert job_id > new_job_id()


@pytest.mark.parametrize(
    "value",
    ["", "01J", "01jd3w6q8z5x7m2k4n9p0r1s2t", "01JD3W6Q8Z5X7M2K4N9P0R1S2U", None, 42, "0" * 27],
)
def test_is_job_id_refuses(value: object) -> None:
    assert not is_job_id(value)


def test_partition_key_is_the_workflow_id_when_set_else_the_job_id() -> None:
    job_id = new_job_id()
    assert partition_key(job_id, None) == job_id.encode()
    assert partition_key(job_id, "wf-42") == b"wf-42"
