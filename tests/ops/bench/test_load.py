"""A scenario's load: due times, and when each job's turn to be submitted comes."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from jobstream._ops.bench.app import HOURLY_TYPES, app
from jobstream._ops.bench.load import CHUNK, PACE_S, Load
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.scheduling import next_due_ms
from jobstream._pipeline.scheduling.cron import CronSpec


def test_steady_spreads_the_jobs_evenly_over_the_duration() -> None:
    load = Load.steady(rate=4, duration_s=2, lead_s=1)
    assert load.offsets_ms == [0, 250, 500, 750, 1000, 1250, 1500, 1750]


def test_unpaced_jobs_come_at_once_in_chunks() -> None:
    load = Load.burst(CHUNK + 5, lead_s=60)
    assert set(load.offsets_ms) == {0}
    assert list(load.chunks(now_ms() + 60_000, threading.Event())) == [
        (0, CHUNK),
        (CHUNK, CHUNK + 5),
    ]


def test_the_top_of_the_hour_mixes_every_type_with_every_owner_at_one_minute() -> None:
    load = Load.top_of_hour(10_000, HOURLY_TYPES, owners=50, lead_s=None)
    assert set(load.offsets_ms) == {0}
    assert len(set(load.owners)) == 50 and len(set(load.job_types)) == 50
    assert len(set(zip(load.owners, load.job_types, strict=True))) == 2500
    assert all(app.get(t).job_type == t for t in HOURLY_TYPES)
    now = 1_798_000_012_345
    due = load.first_due_ms(now)
    assert due % 60_000 == 0 and due >= now + load.lead_s * 1000
    cron = load.when(due)["cron"]
    assert isinstance(cron, CronSpec) and cron.max_runs == 1
    request = JobRequest(job_type=load.job_types[0], owner=load.owners[0], cron=cron)
    assert request.cron is not None
    assert next_due_ms(cron, now, job_id="j", runs_so_far=0) == due, "its one run at the top"


def test_two_owners_are_due_together_the_flood_submitted_first() -> None:
    load = Load.two_owners(5, 2, lead_s=30)
    assert load.offsets_ms == [0] * 7 and not load.paced
    assert load.owners == ("owner-a",) * 5 + ("owner-b",) * 2


def test_paced_jobs_come_only_when_within_the_lead_of_their_due_time() -> None:
    load = Load("steady", [0, 100, 60_000], lead_s=1, paced=True)
    halt = threading.Event()
    chunks = load.chunks(now_ms(), halt)
    assert next(chunks) == (0, 2)  # due now and in 100 ms; the third is a minute away
    halt.set()
    assert list(chunks) == []


def test_paced_jobs_come_in_one_chunk_a_pace_not_one_a_turn() -> None:
    # 2,000 jobs/s for 0.4 s: a job's turn every half millisecond, a look every 50 ms,
    # and each chunk takes its submitter 3 ms (a flush), in which six more turns come.
    load = Load.steady(rate=2000, duration_s=0.4, lead_s=0.001)
    chunks = []
    for chunk in load.chunks(now_ms(), threading.Event()):
        chunks.append(chunk)
        time.sleep(0.003)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(load.offsets_ms) == 800
    assert all(upto == first for (_, first), (upto, _) in itertools.pairwise(chunks))
    assert len(chunks) <= 0.4 / PACE_S + 2, chunks


@pytest.mark.parametrize("make", [
    lambda: Load.steady(rate=0, duration_s=1, lead_s=1),
    lambda: Load.steady(rate=1, duration_s=0, lead_s=1),
    lambda: Load.steady(rate=1, duration_s=1, lead_s=0),
    lambda: Load.burst(0, lead_s=None),
    lambda: Load.burst(10, lead_s=-1),
    lambda: Load.two_owners(0, 10, lead_s=None),
    lambda: Load.two_owners(10, 0, lead_s=None),
])  # fmt: skip
def test_a_load_that_cannot_run_is_refused(make: Callable[[], Load]) -> None:
    with pytest.raises(ValueError):
        make()


def test_a_steady_load_beside_goes_with_a_burst_or_the_top_of_the_hour_only() -> None:
    from jobstream._ops.bench.e2e import BESIDE_LEAD_S, BESIDE_S, Scenario, _beside

    side = _beside(Scenario.burst, 300)
    assert side is not None and side.paced and side.lead_s == BESIDE_LEAD_S
    assert len(side.offsets_ms) == 300 * BESIDE_S
    assert _beside(Scenario.top_of_hour, 300) is not None
    assert _beside(Scenario.burst, 0) is None
    assert _beside(Scenario.steady, 300) is None
