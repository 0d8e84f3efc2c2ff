"""Where a timer store's records belong under a partition count, and which partitions a
grown one hears from (pipeline/timers/homes.py, pipeline/growth/layout.py, and the plan of
``jobstream topics grow``, pipeline/timers/grow.py)."""

from __future__ import annotations

import msgspec
import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError, ValidationError
from jobstream._pipeline.growth.layout import Layout, added, fresh, sources
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.timers.collapse import singleton_timer_id, window_timer_id
from jobstream._pipeline.timers.entry import (
    DebounceEntry,
    JobEntry,
    Marker,
    MarkerEntry,
    SingletonEntry,
    ended_timer_id,
    retry_timer_id,
)
from jobstream._pipeline.timers.grow import plan_grow
from jobstream._pipeline.timers.homes import home_key, home_partition, node_home_key
from jobstream._pipeline.timers.nodes import node_key, signal_key, workflow_key
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted


def job(**fields: object) -> JobSubmitted:
    data = dict(submitted(run_at_ms=1).data)
    data.update(fields)
    return msgspec.convert(data, JobSubmitted)


def test_a_job_belongs_where_its_workflow_or_its_own_id_is_keyed() -> None:
    alone, step = job(job_id="JOBA"), job(job_id="JOBB", workflow_id="wf-1")
    for j, key in ((alone, b"JOBA"), (step, b"wf-1")):
        raw = JobEntry(timer_id=j.job_id, due_ms=5, job=j).encode()
        assert home_key(j.job_id.encode(), raw) == key
        assert home_partition(j.job_id.encode(), raw, 12) == java_partition(key, 12)


def test_keyed_entries_belong_where_their_collapse_key_is() -> None:
    j = job(job_id="JOBC")
    window = DebounceEntry(timer_id=window_timer_id("acme", "k1"), due_ms=1, job=j,
                           run_id="RUN", run_idempotency_key="debounce:JOBC", opened_ms=0)
    single = SingletonEntry(timer_id=singleton_timer_id("acme", "k2"), due_ms=1,
                            current="JOBC", key_owner="acme", blocked=True)
    assert home_key(window.timer_id.encode(), window.encode()) == b"debounce:acme\x00k1"
    assert home_key(single.timer_id.encode(), single.encode()) == b"singleton:acme\x00k2"


def test_markers_belong_with_their_job_or_workflow() -> None:
    retry = MarkerEntry(timer_id=retry_timer_id("JOBD"), due_ms=1,
                        job=Marker(job_id="JOBD", idempotency_key=None))
    ended = MarkerEntry(timer_id=ended_timer_id("acme", "wf-2"), due_ms=1,
                        job=Marker(job_id="wf-2", idempotency_key=None, owner="acme"))
    assert home_key(retry.timer_id.encode(), retry.encode()) == b"JOBD"
    assert home_key(ended.timer_id.encode(), ended.encode()) == b"wf-2"


def test_workflow_records_belong_with_their_workflow_whatever_their_names_hold() -> None:
    for key in (node_key("ac/me", "wf\x003", "JOBE"), workflow_key("", "wf\x003"),
                signal_key("acme", "wf\x003", "approved")):
        assert node_home_key(key) == b"wf\x003"
        assert home_key(key, b"{}") == b"wf\x003"


@pytest.mark.parametrize(("old", "new"), [(6, 12), (3, 12), (4, 6), (5, 7), (1, 4)])
def test_a_partition_hears_from_every_old_partition_a_key_can_move_from(old: int,
                                                                      new: int) -> None:
    moves: dict[int, set[int]] = {q: set() for q in range(new)}
    for n in range(5000):
        key = f"JOB{n}".encode()
        before, after = java_partition(key, old), java_partition(key, new)
        if before != after:
            moves[after].add(before)
    for q in range(new):
        assert moves[q] <= sources(q, old, new), q
        assert q not in sources(q, old, new)
    if new % old == 0:  # doubling and the like: an old partition takes nothing in
        assert all(not sources(p, old, new) for p in range(old))


def test_sources_refuse_a_partition_outside_the_count() -> None:
    with pytest.raises(ValueError, match="partition 12 of 12"):
        sources(12, 6, 12)


def test_a_new_partition_waits_until_its_sources_have_settled() -> None:
    layout = added(6, 12)
    assert layout.waits_for(9) == {3}
    assert not layout.hear(3).waits_for(9)
    assert not fresh(6).waits_for(3)
    grown = fresh(4).grown(6)
    assert grown == Layout(count=6, old=4, settled=False, heard=[])
    assert grown.waits_for(1) == {0, 2, 3}
    assert Layout.decode(grown.hear(2).encode()).heard == [2]


TOPICS = Topics(Settings())


def counts(intake: int, retry: int, changelog: int) -> dict[str, int]:
    return {TOPICS.intake: intake, TOPICS.retry: retry, TOPICS.timers_changelog: changelog}


def test_a_grow_grows_the_changelog_first_and_the_inputs_together() -> None:
    plan = plan_grow(TOPICS, counts(6, 6, 6), 12)
    assert (plan.old, plan.grow_changelog, plan.mark_new) == (6, True, True)
    assert plan.grow_inputs == (TOPICS.intake, TOPICS.retry)
    assert plan_grow(TOPICS, counts(12, 12, 12), 12).nothing_to_do


def test_a_grow_that_stopped_is_finished_without_marking_again() -> None:
    after_changelog = plan_grow(TOPICS, counts(6, 6, 12), 12)
    assert after_changelog.mark_new and not after_changelog.grow_changelog
    half = plan_grow(TOPICS, counts(12, 6, 12), 12)
    assert (half.mark_new, half.grow_inputs) == (False, (TOPICS.retry,))


def test_a_grow_refuses_fewer_partitions_missing_topics_and_odd_states() -> None:
    with pytest.raises(ValidationError, match="--partitions: 4 is fewer"):
        plan_grow(TOPICS, counts(6, 6, 6), 4)
    with pytest.raises(TopicMismatchError, match=r"jobs\.retry"):
        plan_grow(TOPICS, {TOPICS.intake: 6, TOPICS.timers_changelog: 6}, 12)
    with pytest.raises(TopicMismatchError, match="no state a grow leaves"):
        plan_grow(TOPICS, counts(6, 9, 12), 12)
    with pytest.raises(TopicMismatchError, match="no state a grow leaves"):
        plan_grow(TOPICS, counts(6, 6, 3), 12)
