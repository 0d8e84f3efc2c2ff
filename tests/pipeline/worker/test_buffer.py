"""A tier's buffer: partitions served in turn, sizes kept, hoarding partitions named."""

from __future__ import annotations

from jobstream._pipeline.worker.buffer import TierBuffer

P0, P1, P2 = ("t", 0), ("t", 1), ("t", 2)


def size_of(item: str) -> int:
    return len(item)


def test_partitions_are_served_in_turn_each_in_its_order() -> None:
    buffer: TierBuffer[str] = TierBuffer()
    for item in ("a1", "a2", "a3", "a4"):
        buffer.append(P0, item, len(item))
    for item in ("b1", "b2"):
        buffer.append(P1, item, len(item))
    served = [buffer.popleft(size_of) for _ in range(len(buffer))]
    assert served == ["a1", "b1", "a2", "b2", "a3", "a4"]
    assert not buffer and len(buffer) == 0 and buffer.bytes == 0


def test_a_partition_that_comes_back_joins_the_end_of_the_turn() -> None:
    buffer: TierBuffer[str] = TierBuffer()
    buffer.append(P0, "a1", 2)
    buffer.append(P1, "b1", 2)
    assert buffer.popleft(size_of) == "a1"
    buffer.append(P0, "a2", 2)
    buffer.append(P2, "c1", 2)
    assert [buffer.popleft(size_of) for _ in range(3)] == ["b1", "a2", "c1"]


def test_forgotten_partitions_take_their_records_and_bytes_away() -> None:
    buffer: TierBuffer[str] = TierBuffer()
    buffer.append(P0, "aaaa", 4)
    buffer.append(P1, "bb", 2)
    buffer.forget([P0])
    assert len(buffer) == 1 and buffer.bytes == 2 and buffer.held(P0) == 0
    assert buffer.popleft(size_of) == "bb"


def test_hoarding_pauses_at_the_share_and_resumes_at_half_of_it() -> None:
    buffer: TierBuffer[str] = TierBuffer()
    for i in range(10):
        buffer.append(P0, f"a{i}", 2)
    buffer.append(P1, "b0", 2)
    paused = buffer.hoarding(10, frozenset())
    assert paused == {P0}
    for _ in range(5):  # b0 and four of P0's: P0 holds 6, above half its share
        buffer.popleft(size_of)
    assert buffer.held(P0) == 6
    assert buffer.hoarding(10, paused) == {P0}
    assert buffer.hoarding(10, frozenset()) == set()  # not paused: not yet at its share
    buffer.popleft(size_of)
    assert buffer.hoarding(10, paused) == set()  # 5 is half: resumed


def test_a_partition_may_be_skipped_without_losing_its_turn() -> None:
    buffer: TierBuffer[str] = TierBuffer()
    for partition, item in ((P0, "a1"), (P1, "b1"), (P2, "c1"), (P0, "a2")):
        buffer.append(partition, item, len(item))
    assert buffer.first(lambda partition: partition != P0) == P1
    assert buffer.popleft(size_of, P1) == "b1"
    assert buffer.first(lambda partition: partition == P1) is None
    assert [buffer.popleft(size_of) for _ in range(len(buffer))] == ["a1", "c1", "a2"]
    assert buffer.bytes == 0
