"""Owner schedule keys: one range per owner, fire order within it, exact bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobstream._pipeline.model.time_keys import (
    OWNER_PREFIX,
    OWNER_UPPER_BOUND,
    decode_owner_schedule_key,
    encode_owner_schedule_key,
    owner_due_bound,
    owner_range_end,
    owner_range_start,
)

owners = st.text(max_size=20)
fire_times = st.integers(0, 2**64 - 2)
job_ids = st.text(alphabet="0123456789ABCDEFGHJKMNPQRSTVWXYZ/retry", min_size=1, max_size=30)


@given(owners, fire_times, job_ids)
def test_round_trip_and_inside_the_owner_range(owner: str, fire: int, job_id: str) -> None:
    key = encode_owner_schedule_key(owner, fire, job_id)
    assert decode_owner_schedule_key(key) == (owner, fire, job_id)
    assert owner_range_start(owner) <= key < owner_range_end(owner)
    assert OWNER_PREFIX <= key < OWNER_UPPER_BOUND


@given(owners, owners, fire_times, job_ids)
def test_no_owner_key_falls_in_another_owners_range(a: str, b: str, fire: int, job: str) -> None:
    if a == b:
        return
    key = encode_owner_schedule_key(b, fire, job)
    assert not owner_range_start(a) <= key < owner_range_end(a)


@given(owners, fire_times, fire_times, job_ids)
def test_due_bound_holds_exactly_the_keys_due(owner: str, fire: int, now: int, job: str) -> None:
    key = encode_owner_schedule_key(owner, fire, job)
    assert (key < owner_due_bound(owner, now)) == (fire <= now)


@given(owners, fire_times, fire_times, job_ids, job_ids)
def test_byte_order_is_fire_order_within_an_owner(
    owner: str, f1: int, f2: int, j1: str, j2: str
) -> None:
    k1, k2 = encode_owner_schedule_key(owner, f1, j1), encode_owner_schedule_key(owner, f2, j2)
    if f1 < f2:
        assert k1 < k2


def test_not_an_owner_key_is_refused() -> None:
    with pytest.raises(ValueError, match="not an owner schedule key"):
        decode_owner_schedule_key(b"s" + bytes(16) + b"job")
    with pytest.raises(ValueError, match="job_id"):
        encode_owner_schedule_key("a", 1, "")
