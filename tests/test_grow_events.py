"""``jobstream topics grow --events-partitions`` under load (docs/scaling.md, "Growing
jobs.events"; docs/adr/0013-events-partitions-that-grow.md): the whole pipeline as
processes (timers, a status processor, the retry router, a real worker with heartbeats
every 0.5 s and 4 s leases) runs long jobs and short ones while jobs.events grows from 6
to 12 partitions and a second status processor joins (ops/faults/grow_events.py). Then
every job SUCCEEDED at its first attempt, the grow declared no run lost and counted no
duplicate, and runs started before the grow whose jobs moved to another partition are
still declared lost, once, when their worker is killed after it: their leases moved with
them.

Compact for CI; ``jobstream faults grow-events`` runs the full size (docs/scaling.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from jobstream._ops.faults.grow_events import EventsGrowRun, EventsGrowSize, EventsGrowTally
from jobstream._pipeline.config import load_settings
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.topics import Topics

SIZE = EventsGrowSize(finished=100, long=12, load_per_s=20)


@pytest.fixture(scope="module")
def tally(kafka_bootstrap: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventsGrowTally]:  # fmt: skip
    settings = load_settings(bootstrap_servers=kafka_bootstrap,
                             topic_prefix=f"grow-events-{uuid.uuid4().hex[:8]}.",
                             timer_partitions=2, exec_partitions=2, events_partitions=SIZE.old,
                             status_partitions=2, dlq_partitions=1)  # fmt: skip
    ensure_topics(settings.kafka_config, Topics(settings).specs())
    found = EventsGrowRun(settings, tmp_path_factory.mktemp("stack"), SIZE).run()
    print(f"grow of jobs.events: {found.summary()}")  # in the output of a failing test
    yield found


def test_the_old_partitions_handed_jobs_over(tally: EventsGrowTally) -> None:
    assert tally.handed_over > 0, "no job moved: the grow was not exercised"
    assert tally.jobs >= SIZE.finished + SIZE.long + 3


def test_every_job_succeeded_once_and_the_grow_lost_none(tally: EventsGrowTally) -> None:
    assert tally.not_succeeded == []
    assert tally.retried == [], "jobs needed a second attempt"
    assert tally.failing_off == [], "failures routed other than once"
    assert tally.lost_by_grow == [], "runs declared lost by the grow"
    assert tally.duplicates == []


def test_a_run_killed_after_the_grow_is_declared_lost_once_where_its_job_moved(
    tally: EventsGrowTally,
) -> None:
    assert list(tally.victims_lost.values()) == [1, 1, 1], tally.victims_lost
    assert tally.victims_moved == 2
