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
