"""Timer store keys: byte order is fire order, keys round-trip, the due bound is exact."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rocksdict import Options, Rdict, ReadOptions

from jobstream._pipeline.model.time_keys import (
    SCHEDULE_LOWER_BOUND,
    SCHEDULE_UPPER_BOUND,
    decode_schedule_key,
    due_upper_bound,
    encode_index_key,
    encode_schedule_key,
    schedule_floor,
)

fire_times = st.integers(0, 2**64 - 1)
job_ids = st.text(min_size=1, max_size=30)


def test_layout() -> None:
    key = encode_schedule_key(120_001, "job")
    assert key == b"s" + (2).to_bytes(8, "big") + (120_001).to_bytes(8, "big") + b"job"
    assert encode_index_key("job") == b"jjob"


@given(fire_times, job_ids)
def test_round_trip(due_ms: int, job_id: str) -> None:
    assert decode_schedule_key(encode_schedule_key(due_ms, job_id)) == (due_ms, job_id)


@given(fire_times, job_ids, fire_times, job_ids)
def test_byte_order_is_fire_then_job_order(f1: int, j1: str, f2: int, j2: str) -> None:
    k1, k2 = encode_schedule_key(f1, j1), encode_schedule_key(f2, j2)
    assert (k1 < k2) == ((f1, j1) < (f2, j2))
    assert (k1 == k2) == ((f1, j1) == (f2, j2))
    assert SCHEDULE_LOWER_BOUND <= k1 < SCHEDULE_UPPER_BOUND


@given(fire_times, job_ids, st.integers(0, 2**64 - 1))
def test_due_bound_separates_due_from_not_due(due_ms: int, job_id: str, now_ms: int) -> None:
    key = encode_schedule_key(due_ms, job_id)
    assert (key < due_upper_bound(now_ms)) == (due_ms <= now_ms)


@given(job_ids)
def test_index_keys_stay_outside_the_schedule_range(job_id: str) -> None:
    assert not SCHEDULE_LOWER_BOUND <= encode_index_key(job_id) < SCHEDULE_UPPER_BOUND


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"s",
        b"s" + bytes(16),
        b"j" + bytes(17),
        b"s" + (9).to_bytes(8, "big") + bytes(8) + b"x",
    ],
)
def test_decode_rejects_other_keys(bad: bytes) -> None:
    with pytest.raises(ValueError):
        decode_schedule_key(bad)


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        encode_schedule_key(-1, "job")
    with pytest.raises(ValueError):
        encode_schedule_key(2**64, "job")
    with pytest.raises(ValueError):
        encode_schedule_key(1, "")


def test_a_rocksdb_range_scan_returns_exactly_the_due_timers(tmp_path: Path) -> None:
    # raw_mode: rocksdict otherwise tags each key with its Python type, and bounds stop matching.
    db = Rdict(str(tmp_path / "timers"), options=Options(raw_mode=True))
    try:
        entries = [(59_999, "b"), (60_000, "a"), (60_000, "z"), (60_001, "a"), (10**13, "a")]
        for due_ms, job_id in reversed(entries):
            db[encode_schedule_key(due_ms, job_id)] = b""
            db[encode_index_key(job_id)] = b""
        db[b"\x00changelog-offset"] = b""  # the store's own metadata
        options = ReadOptions()
        options.set_iterate_upper_bound(due_upper_bound(60_000))
        keys = cast(list[bytes], list(db.keys(from_key=SCHEDULE_LOWER_BOUND, read_opt=options)))
        due = [decode_schedule_key(k) for k in keys]
        assert due == [(59_999, "b"), (60_000, "a"), (60_000, "z")]
    finally:
        db.close()


@given(fire_times, job_ids, fire_times)
def test_the_floor_bounds_keys_by_fire_time(due_ms: int, job_id: str, floor_ms: int) -> None:
    """A scan from ``schedule_floor(f)`` sees exactly the keys firing at or after f."""
    key = encode_schedule_key(due_ms, job_id)
    assert (key >= schedule_floor(floor_ms)) == (due_ms >= floor_ms)
