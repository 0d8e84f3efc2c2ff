"""Job ids sort by time and, within a millisecond, by creation; execution ids are replayable."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.scheduling.ids import (
    ALPHABET,
    execution_id,
    job_id_time_ms,
    new_job_id,
    parse_execution_id,
)

CROCKFORD = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
MAX_MS = 2**48 - 1


def test_shape_and_alphabet() -> None:
    job_id = new_job_id()
    assert len(job_id) == 26
    assert set(job_id) <= CROCKFORD


def test_timestamp_encoding_matches_the_ulid_spec() -> None:
    # The ULID README's example 01ARZ3NDEKTSV4RRFFQ69G5FAV carries 1469922850259.
    assert new_job_id(1469922850259)[:10] == "01ARZ3NDEK"
    assert job_id_time_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV") == 1469922850259
    assert new_job_id(0)[:10] == "0000000000"
    assert new_job_id(MAX_MS)[:10] == "7ZZZZZZZZZ"


@given(st.integers(0, MAX_MS))
def test_time_round_trips(now_ms: int) -> None:
    assert job_id_time_ms(new_job_id(now_ms)) == now_ms


@given(st.lists(st.integers(0, MAX_MS), min_size=2, max_size=20, unique=True))
def test_string_order_is_time_order(times: list[int]) -> None:
    ids = {now: new_job_id(now) for now in times}
    assert sorted(ids.values()) == [ids[now] for now in sorted(times)]
    assert sorted(i.encode() for i in ids.values()) == [ids[n].encode() for n in sorted(times)]


def test_monotonic_within_one_millisecond() -> None:
    ids = [new_job_id(1_780_000_000_123) for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert {job_id_time_ms(i) for i in ids} == {1_780_000_000_123}


def test_unique_across_threads() -> None:
    results: list[list[str]] = [[] for _ in range(8)]

    def make(out: list[str]) -> None:
        out.extend(new_job_id() for _ in range(2000))

    threads = [threading.Thread(target=make, args=(out,)) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [i for out in results for i in out]
    assert len(set(everything)) == len(everything)
    assert all(out == sorted(out) for out in results)  # each thread's ids rise


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "01ARZ3NDEK",
        "01ARZ3NDEKTSV4RRFFQ69G5FAVX",
        "01ARZ3NDEKTSV4RRFFQ69G5FAI",
        "81ARZ3NDEKTSV4RRFFQ69G5FAV",
        "01arz3ndektsv4rrffq69g5fav",
    ],
)
def test_not_a_job_id(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        job_id_time_ms(bad)
    assert caught.value.field == "job_id"


def test_out_of_range_timestamp() -> None:
    with pytest.raises(ValueError):
        new_job_id(MAX_MS + 1)
    with pytest.raises(ValueError):
        new_job_id(-1)


def test_execution_id_is_deterministic_and_distinct() -> None:
    job = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    assert execution_id(job, 1, 1_780_000_000_000) == f"{job}:1780000000000:1"
    assert execution_id(job, 1, 1_780_000_000_000) == execution_id(job, 1, 1_780_000_000_000)
    assert execution_id(job, 2, 1_780_000_000_000) != execution_id(job, 1, 1_780_000_000_000)
    assert execution_id(job, 1, 1_780_000_000_001) != execution_id(job, 1, 1_780_000_000_000)
    assert parse_execution_id(execution_id(job, 3, 42)) == (job, 42, 3)
    with pytest.raises(ValueError):
        execution_id(job, 0, 42)
    with pytest.raises(ValidationError):
        parse_execution_id("no-separators")


@pytest.mark.parametrize("ms", [0, 1, 1_798_000_000_000, (1 << 48) - 1])
def test_an_id_is_its_value_in_crockford_base32(ms: int) -> None:
    first, second = new_job_id(ms), new_job_id(ms)
    assert len(first) == 26 and set(first) <= set(ALPHABET)
    value = [0]  # then the 130-bit value of each, 5 bits per character
    for job_id in (first, second):
        decoded = 0
        for char in job_id:
            decoded = (decoded << 5) | ALPHABET.index(char)
        value.append(decoded)
    assert value[1] >> 80 == ms and value[2] == value[1] + 1
    assert job_id_time_ms(first) == ms
