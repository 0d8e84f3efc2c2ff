"""What the failover run counts, without a broker (ops/faults/failover.py): an event read
in both regions counts once, and a run fails on a lost job in either phase."""

from __future__ import annotations

from jobstream._ops.faults.failover import distinct, problems
from jobstream._ops.faults.observer import Seen


def _seen(seen_ms: int, kind: str, at_ms: int = 100) -> Seen:
    return Seen(seen_ms, {"job_id": "j1", "kind": kind, "at_ms": at_ms, "execution_id": "e1",
                          "attempt": 1})  # fmt: skip


def test_an_event_the_mirror_copied_counts_once_and_when_first_seen() -> None:
    primary = [_seen(10, "STARTED"), _seen(11, "SUCCEEDED")]
    standby = [_seen(50, "STARTED"), _seen(51, "SUCCEEDED"), _seen(52, "STARTED", at_ms=200)]
    found = distinct(standby + primary)
    assert [(s.seen_ms, s.event["kind"]) for s in found] == [
        (10, "STARTED"), (11, "SUCCEEDED"), (52, "STARTED")]  # fmt: skip


def test_a_run_fails_on_a_lost_job_or_a_deadline_in_either_phase() -> None:
    fine = {"lost": 0, "ending": "all ended"}
    assert problems({**fine, "failback": fine}) == []
    assert problems({**fine, "run_more_than_once": 12}) == []
    assert problems({"lost": 2, "ending": "all ended"}) == ["failover: 2 jobs lost"]
    assert problems({**fine, "failback": {"lost": 0, "ending": "deadline"}}) == [
        "failback: not every job ended before the deadline"]
