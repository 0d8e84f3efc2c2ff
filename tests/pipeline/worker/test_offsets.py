"""Commit watermarks when jobs of a partition finish out of order."""

from __future__ import annotations

from pipeline.worker.offsets import OffsetTracker

T = "jobs.exec.x.normal"


def test_watermark_is_the_lowest_unfinished_offset() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0)
    assert tracker.to_commit() == {}, "nothing fetched: nothing to commit"
    refs = [tracker.fetched(T, 0, offset) for offset in (10, 11, 12)]
    assert all(refs)
    assert tracker.watermark(T, 0) == 10
    tracker.done(refs[2])  # type: ignore[arg-type]
    tracker.done(refs[1])  # type: ignore[arg-type]
    assert tracker.to_commit() == {(T, 0): 10}, "10 still runs: 11 and 12 wait for it"
    tracker.done(refs[0])  # type: ignore[arg-type]
    assert tracker.to_commit() == {(T, 0): 13}


def test_only_moved_watermarks_are_committed_again() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0)
    tracker.assign(T, 1)
    ref = tracker.fetched(T, 0, 5)
    tracker.fetched(T, 1, 7)
    assert ref is not None
    tracker.done(ref)
    offsets = tracker.to_commit()
    assert offsets == {(T, 0): 6, (T, 1): 7}
    tracker.committed(offsets)
    assert tracker.to_commit() == {}


def test_a_finish_from_an_earlier_assignment_does_not_move_the_new_one() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0)
    old = tracker.fetched(T, 0, 3)
    assert old is not None
    tracker.revoke(T, 0)
    assert tracker.fetched(T, 0, 4) is None, "records of a revoked partition are not tracked"
    tracker.assign(T, 0)
    new = tracker.fetched(T, 0, 3)
    assert new is not None
    tracker.done(old)
    assert tracker.watermark(T, 0) == 3
    tracker.done(new)
    assert tracker.watermark(T, 0) == 4
