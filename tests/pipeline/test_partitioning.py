"""Keys and partitions: the hash every producer of jobstream's topics must share."""

from __future__ import annotations

import pytest

from jobstream._pipeline.partitioning import java_partition, murmur2, partition_key


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafka_s_own_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected & 0xFFFFFFFF


def test_a_job_is_keyed_by_its_workflow_when_it_has_one() -> None:
    assert partition_key("01JOB", None) == b"01JOB"
    assert partition_key("01JOB", "wf-7") == b"wf-7"


def test_the_partition_is_the_positive_hash_modulo_the_count() -> None:
    # "21" hashes to a negative int in Java: its sign bit is dropped, not its value negated.
    assert java_partition(b"21", 6) == (-973932308 & 0x7FFFFFFF) % 6
    assert {java_partition(str(n).encode(), 6) for n in range(100)} == set(range(6))
