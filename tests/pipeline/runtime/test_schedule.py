"""When a transaction commits: every interval under load, at once after an idle spell."""

from __future__ import annotations

import pytest

from jobstream._pipeline.runtime.schedule import CommitSchedule


def test_a_commit_is_due_once_the_interval_since_the_last_has_passed() -> None:
    schedule = CommitSchedule(interval_s=0.1, max_pending=1000)
    assert schedule.due(5.0, pending=1), "nothing committed yet: the first goes at once"
    schedule.committed(5.0)
    assert not schedule.due(5.05, pending=400), "outcomes wait for the interval"
    assert schedule.due(5.1, pending=400)
    assert schedule.due(5.1, pending=0), "moved offsets alone commit on the interval too"


def test_an_idle_lane_commits_its_next_outcome_at_once() -> None:
    schedule = CommitSchedule(interval_s=0.1)
    schedule.committed(5.0)
    assert schedule.due(9.0, pending=1), "the interval counts from the last commit"


def test_enough_pending_outcomes_make_a_commit_due_before_the_interval() -> None:
    schedule = CommitSchedule(interval_s=10.0, max_pending=500)
    schedule.committed(5.0)
    assert not schedule.due(5.01, pending=499)
    assert schedule.due(5.01, pending=500)


def test_a_zero_interval_commits_on_every_iteration() -> None:
    schedule = CommitSchedule(interval_s=0.0)
    schedule.committed(5.0)
    assert schedule.due(5.0, pending=1)


def test_records_wait_the_grace_longer_for_a_commit_expected_to_take_them() -> None:
    schedule = CommitSchedule(interval_s=0.1)
    schedule.committed(5.0)
    assert not schedule.due(5.15, pending=300, grace_s=0.2), "a claim is coming: they ride it"
    assert schedule.due(5.3, pending=300, grace_s=0.2), "but no longer than the grace"
    assert schedule.due(5.15, pending=300), "no claim coming: the interval alone"
    schedule.hurry()
    assert schedule.due(5.15, pending=1, grace_s=0.2), "a hurried record does not wait"


def test_a_hurried_commit_is_due_at_once_until_it_has_committed() -> None:
    schedule = CommitSchedule(interval_s=0.1)
    schedule.committed(5.0)
    schedule.hurry()
    assert schedule.due(5.01, pending=1), "a record others wait on does not wait"
    assert schedule.due(5.02, pending=1), "still due: the commit it asked for has not happened"
    schedule.committed(5.02)
    assert not schedule.due(5.03, pending=1), "the next records wait for the interval again"


@pytest.mark.parametrize(("interval_s", "max_pending"), [(-0.1, 10), (0.1, 0)])
def test_nonsense_settings_are_refused(interval_s: float, max_pending: int) -> None:
    with pytest.raises(ValueError):
        CommitSchedule(interval_s=interval_s, max_pending=max_pending)
