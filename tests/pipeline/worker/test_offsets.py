"""Commit watermarks when jobs of a partition finish out of order."""

from __future__ import annotations

import random

from jobstream._pipeline.worker.offsets import (
    METADATA_MOST_CHARS,
    Mark,
    OffsetTracker,
    decode_done,
    encode_done,
)

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
    assert tracker.to_commit()[(T, 0)].offset == 10, "10 still runs: 11 and 12 wait for it"
    tracker.done(refs[0])  # type: ignore[arg-type]
    assert tracker.to_commit() == {(T, 0): Mark(13, "")}


def test_only_moved_watermarks_are_committed_again() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0)
    tracker.assign(T, 1)
    ref = tracker.fetched(T, 0, 5)
    tracker.fetched(T, 1, 7)
    assert ref is not None
    tracker.done(ref)
    offsets = tracker.to_commit()
    assert offsets == {(T, 0): Mark(6, ""), (T, 1): Mark(7, "")}
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


def test_offsets_done_above_the_watermark_go_with_it() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0)
    refs = {offset: tracker.fetched(T, 0, offset) for offset in range(10, 16)}
    for offset in (12, 13, 15):  # claimed ahead of 10, 11 and 14
        tracker.done(refs[offset])  # type: ignore[arg-type]
    marks = tracker.to_commit()
    assert marks[(T, 0)].offset == 10
    assert decode_done(10, marks[(T, 0)].metadata) == {12, 13, 15}
    tracker.committed(marks)
    assert tracker.to_commit() == {}, "nothing more done: nothing to commit"
    tracker.done(refs[14])  # type: ignore[arg-type]
    assert decode_done(10, tracker.to_commit()[(T, 0)].metadata) == {12, 13, 14, 15}, (
        "a record done above the watermark is committed even though the watermark stays"
    )
    for offset in (10, 11):
        tracker.done(refs[offset])  # type: ignore[arg-type]
    assert tracker.to_commit() == {(T, 0): Mark(16, "")}


def test_the_next_owner_passes_over_what_the_last_one_did() -> None:
    last = OffsetTracker()
    last.assign(T, 0)
    refs = [last.fetched(T, 0, offset) for offset in range(5)]
    for ref in (refs[1], refs[3]):
        last.done(ref)  # type: ignore[arg-type]
    mark = last.to_commit()[(T, 0)]

    nxt = OffsetTracker()
    nxt.assign(T, 0, mark.offset, mark.metadata)
    fetched = [nxt.fetched(T, 0, offset) for offset in range(mark.offset, 6)]
    assert [ref.offset for ref in fetched if ref is not None] == [0, 2, 4, 5]
    assert nxt.started_before == 2
    # Until the watermark passes them, they go on with every commit, for the owner after.
    assert decode_done(0, nxt.to_commit()[(T, 0)].metadata) == {1, 3}


def test_an_owner_that_commits_before_fetching_keeps_what_the_last_one_did() -> None:
    tracker = OffsetTracker()
    tracker.assign(T, 0, 7, encode_done(7, [7, 9]))
    ref = tracker.fetched(T, 0, 8)  # 7 was already done, and not fetched yet: no matter
    assert ref is not None
    assert decode_done(8, tracker.to_commit()[(T, 0)].metadata) == {9}
    assert tracker.fetched(T, 0, 9) is None


def test_done_offsets_that_would_outgrow_the_metadata_keep_the_nearest() -> None:
    spread = random.Random(7).sample(range(400_000), 50_000)  # a bitmap that barely compresses
    text = encode_done(0, spread)
    assert 0 < len(text) <= METADATA_MOST_CHARS
    kept = decode_done(0, text)
    assert kept and kept == {offset for offset in spread if offset <= max(kept)}


def test_metadata_of_another_form_names_no_offsets() -> None:
    assert decode_done(3, "") == set()
    assert decode_done(3, "written by another tool") == set()
    assert decode_done(3, "done1:!!not base64!!") == set()
