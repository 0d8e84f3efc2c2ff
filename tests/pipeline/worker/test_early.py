"""EarlyRecords: records fetched before their time, released in due order (pure)."""

from __future__ import annotations

from pipeline.worker.early import EarlyRecords

A, B = ("jobs.exec.t.normal", 0), ("jobs.exec.t.normal", 1)


def test_records_leave_in_release_order_once_their_instant_comes() -> None:
    early: EarlyRecords[str] = EarlyRecords()
    early.add(300, A, "late")
    early.add(100, B, "first")
    early.add(100, A, "second")  # same instant: arrival order
    assert early.next_ms() == 100
    assert early.due(99) == []
    assert early.due(100) == [(B, "first"), (A, "second")]
    assert (early.next_ms(), len(early)) == (300, 1)
    assert early.due(1_000) == [(A, "late")]
    assert early.next_ms() is None and len(early) == 0


def test_a_revoked_partitions_records_are_forgotten() -> None:
    early: EarlyRecords[str] = EarlyRecords()
    for at, partition, name in ((50, A, "a1"), (10, B, "b1"), (30, A, "a2"), (20, B, "b2")):
        early.add(at, partition, name)
    early.forget([A])
    assert early.next_ms() == 10
    assert early.due(100) == [(B, "b1"), (B, "b2")]


def test_records_due_at_one_instant_leave_with_the_partitions_in_turn() -> None:
    # A flood fetched whole from partition A before B's: B's head leaves second, not last.
    early: EarlyRecords[str] = EarlyRecords()
    for name in ("a1", "a2", "a3", "a4"):
        early.add(100, A, name)
    for name in ("b1", "b2"):
        early.add(100, B, name)
    early.add(50, A, "a0")
    assert [name for _, name in early.due(100)] == ["a0", "a1", "b1", "a2", "b2", "a3", "a4"]
    early.add(100, B, "b3")  # after the instant's records left: its turn starts over
    assert early.due(100) == [(B, "b3")]
