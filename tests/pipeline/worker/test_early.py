"""EarlyRecords: records fetched before their time, released in due order (pure)."""

from __future__ import annotations

from jobstream._pipeline.scheduling.fair_share import weight_of
from jobstream._pipeline.worker.early import EarlyRecords

A, B = ("jobs.exec.t.normal", 0), ("jobs.exec.t.normal", 1)


def owner(name: str) -> str:
    """Records here are names whose owner is their letters: "f2" is owner "f"'s."""
    return name.rstrip("0123456789")


def test_records_leave_in_release_order_once_their_instant_comes() -> None:
    early: EarlyRecords[str] = EarlyRecords(owner)
    early.add(300, A, "late")
    early.add(100, B, "first")
    early.add(100, A, "second")  # same instant, each its owner's first: arrival order
    assert early.next_ms() == 100
    assert early.due(99) == []
    assert early.due(100) == [(B, "first"), (A, "second")]
    assert (early.next_ms(), len(early)) == (300, 1)
    assert early.due(1_000) == [(A, "late")]
    assert early.next_ms() is None and len(early) == 0


def test_a_revoked_partitions_records_are_forgotten() -> None:
    early: EarlyRecords[str] = EarlyRecords(owner)
    for at, partition, name in ((50, A, "a1"), (10, B, "b1"), (30, A, "a2"), (20, B, "b2")):
        early.add(at, partition, name)
    early.forget([A])
    assert early.next_ms() == 10
    assert early.due(100) == [(B, "b1"), (B, "b2")]


def test_records_due_at_one_instant_leave_with_the_owners_in_turn() -> None:
    # Two timer partitions' batches reached one execution partition one after the other,
    # each with small owner "s" at its front: the second batch's "s" job leaves beside the
    # flood's second, not behind the first batch's whole flood ("f").
    early: EarlyRecords[str] = EarlyRecords(owner)
    for name in ("s1", "f1", "f2", "f3", "s2", "f4"):
        early.add(100, A, name)
    early.add(50, B, "f0")
    assert [name for _, name in early.due(100)] == ["f0", "s1", "f1", "f2", "s2", "f3", "f4"]
    early.add(100, B, "f5")  # after the instant's records left: its turn starts over
    assert early.due(100) == [(B, "f5")]


def test_a_record_that_arrives_after_some_left_takes_its_owners_next_turn() -> None:
    # Claimed a few at a time: small owner "s"'s record fetched late still goes before the
    # flood's rest, and the flood's ("f") own late record behind the flood's rest.
    ahead: EarlyRecords[str] = EarlyRecords(owner)
    for i in range(5):
        ahead.add(100, A, f"f{i}")
    ahead.add(100, A, "s0")
    assert [ahead.pop()[1] for _ in range(3)] == ["f0", "s0", "f1"]
    ahead.add(100, B, "s1")
    ahead.add(100, B, "f5")
    assert [name for _, name in ahead.due(100)] == ["s1", "f2", "f3", "f4", "f5"]


def test_an_owners_weight_sets_its_share_of_the_turns() -> None:
    early: EarlyRecords[str] = EarlyRecords(owner, weight_of({"b": 2.0}))
    for i in range(4):
        early.add(100, A, f"p{i}")
    for i in range(4):
        early.add(100, B, f"b{i}")
    assert [name for _, name in early.due(100)] == ["p0", "b0", "b1", "p1", "b2", "b3", "p2",
                                                    "p3"]  # fmt: skip


def test_forgetting_a_partition_drops_the_turns_of_owners_left_with_nothing() -> None:
    early: EarlyRecords[str] = EarlyRecords(owner)
    early.add(100, A, "g1")
    early.add(100, B, "k1")
    early.forget([A])
    early.add(100, B, "g2")  # its turn starts over: first, beside "k"'s first
    assert [name for _, name in early.due(100)] == ["k1", "g2"]
