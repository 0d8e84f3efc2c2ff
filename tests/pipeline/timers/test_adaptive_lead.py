"""The lead a backlog due soon requires (pipeline/timers/lead.py): a burst is fired as far
ahead as it needs, up to JOBSTREAM_FIRE_LEAD_MOST; a few jobs still fire the configured lead
ahead; what a lead changes (cancels, pauses, rate limits) holds for the longer one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.timers.lead import LeadRule, Leads
from tests.support.jobs import cancelled, cron_schedule, schedule_changed, submitted
from tests.support.timers import MINUTE, T0, TOPICS, TimersDriver, driving, executions, kinds

pytestmark = pytest.mark.fast

RULE = LeadRule(least_ms=1000, most_ms=10_000, rate_per_s=100)


# -- the rule -----------------------------------------------------------------------------


def test_few_jobs_due_keep_the_configured_lead() -> None:
    assert RULE.lead_ms([]) == 1000
    assert RULE.lead_ms([5, 3, 0, 7]) == 1000


def test_a_steady_load_below_the_rate_keeps_the_configured_lead() -> None:
    assert RULE.lead_ms([90] * 10) == 1000


def test_a_burst_is_reached_as_soon_as_it_cannot_be_passed_on_in_the_time_left() -> None:
    # 500 due 3 s from now take 5 s at 100/s: the lead reaches their second at once.
    assert RULE.lead_ms([0, 0, 0, 500]) == 4000
    # 350 take 3.5 s, the 3 s before them and the configured 1 s leave time: not yet.
    assert RULE.lead_ms([0, 0, 0, 350]) == 1000
    # Due sooner, the same 350 cannot wait.
    assert RULE.lead_ms([0, 350]) == 2000


def test_the_lead_is_bounded_and_a_count_cut_short_means_the_bound() -> None:
    assert RULE.lead_ms([0] * 9 + [100_000]) == 10_000
    assert RULE.lead_ms([0] * 12 + [100_000]) == 1000, "beyond the horizon: not counted"
    assert RULE.lead_ms([RULE.count_most]) == 10_000


def test_no_lead_or_no_room_above_it_never_adapts() -> None:
    assert not LeadRule(least_ms=0, most_ms=10_000).adapts
    assert not LeadRule(least_ms=1000, most_ms=1000).adapts
    assert LeadRule(least_ms=1000, most_ms=500).lead_ms([10**6]) == 1000


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        LeadRule(least_ms=-1, most_ms=10)
    with pytest.raises(ValueError, match="rate_per_s"):
        LeadRule(least_ms=1, most_ms=10, rate_per_s=0)


def test_the_horizon_never_recedes_and_is_recounted_once_a_second() -> None:
    leads = Leads(RULE)
    assert leads.count_due(0, T0)
    leads.counted(0, T0, [0, 0, 0, 0, 0, 0, 800])
    assert leads.horizon_ms(0, T0) == T0 + 7000
    assert not leads.count_due(0, T0 + 999)
    assert leads.count_due(0, T0 + 1000)
    leads.counted(0, T0 + 1000, [])  # the burst fired: nothing left to count
    assert leads.horizon_ms(0, T0 + 1000) == T0 + 7000, "what the lead reached still fires"
    assert leads.horizon_ms(0, T0 + 9000) == T0 + 10_000, "then the configured lead again"
    assert leads.horizon_ms(1, T0) == T0 + 1000, "each partition its own"


# -- the timers ---------------------------------------------------------------------------


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    driver_ = next(driving_ := driving(tmp_path, settings=Settings(fire_lead=1000,
                                                                  timer_partitions=1)))
    driver_.processor.logic.leads = Leads(RULE)  # 100/s: a burst of hundreds is enough
    yield driver_
    next(driving_, None)


def burst(count: int, due_ms: int, **fields: object) -> list:  # type: ignore[type-arg]
    return [submitted(now_ms=T0, run_at_ms=due_ms, **fields) for _ in range(count)]  # type: ignore[arg-type]


def test_a_burst_fires_as_far_ahead_as_it_needs(driver: TimersDriver) -> None:
    jobs = burst(600, T0 + 8000)
    fired = executions(driver.step(T0, *jobs))
    assert fired == [], "600 at 100/s need 6 s: 8 s ahead, with the configured 1 s, they wait"
    assert executions(driver.step(T0 + 1000)) == []
    assert executions(driver.step(T0 + 2000)) == []
    fired = executions(driver.step(T0 + 3500))
    assert len(fired) == 600, "once less than 6 s and the configured 1 s are left, all of it"
    assert {run["scheduled_at_ms"] for run in fired} == {T0 + 8000}
    assert {run["fired_at_ms"] for run in fired} == {T0 + 3500}
    assert driver.step(T0 + 8000) == []


def test_a_lone_job_still_fires_the_configured_lead_ahead(driver: TimersDriver) -> None:
    driver.step(T0, submitted(now_ms=T0, run_at_ms=T0 + 8000))
    assert executions(driver.step(T0 + 6999)) == []
    assert len(executions(driver.step(T0 + 7000))) == 1


def test_a_cancel_inside_the_longer_lead_reaches_the_workers(driver: TimersDriver) -> None:
    jobs = burst(600, T0 + 8000)
    driver.step(T0, *jobs)
    fired = executions(driver.step(T0 + 3500))
    assert len(fired) == 600
    job_id = jobs[0].data["job_id"]
    emits = driver.step(T0 + 6000, cancelled(job_id, now_ms=T0 + 6000))
    assert kinds(emits) == ["CancelRequested"]
    assert emits[0].topic == TOPICS.control and emits[0].urgent
    epoch = next(run["epoch"] for run in fired if run["job_id"] == job_id)
    assert emits[0].value.data["up_to_epoch"] >= epoch


def test_a_pause_before_the_longer_lead_reaches_a_schedule_stops_its_run(
    driver: TimersDriver,
) -> None:
    # The burst due with the schedule's run reaches it 4 s ahead; the pause comes at 8 s.
    start = T0 - T0 % MINUTE + MINUTE
    schedule = submitted(now_ms=T0, cron=cron_schedule("* * * * *"))
    driver.step(start - 20_000, *burst(600, start), schedule)
    driver.step(start - 8000, schedule_changed(schedule.data["job_id"], "PAUSE",
                                               now_ms=start - 8000))  # fmt: skip
    ran = [run for t in range(-7000, 2000, 500) for run in executions(driver.step(start + t))]
    assert len(ran) == 600
    assert schedule.data["job_id"] not in {run["job_id"] for run in ran}
    assert max(run["fired_at_ms"] for run in ran) <= start - 4000, "fired far ahead"


def test_a_rate_limited_type_in_a_burst_fires_on_its_instant(driver: TimersDriver) -> None:
    driver.processor.logic.throttle.board.set(Limit(LimitKey(job_type="image.render"),
                                                    rate=1000, burst=1000))  # fmt: skip
    limited = burst(5, T0 + 8000, job_type="image.render")
    driver.step(T0, *burst(500, T0 + 8000), *limited)
    ahead = executions(driver.step(T0 + 4000))
    assert len(ahead) == 500
    assert {run["job_id"] for run in ahead}.isdisjoint(job.data["job_id"] for job in limited)
    on_time = executions(driver.step(T0 + 8000))
    assert {run["job_id"] for run in on_time} == {job.data["job_id"] for job in limited}


def test_the_timers_read_the_longest_lead_from_the_settings(tmp_path: Path) -> None:
    for settings, adapts in ((Settings(), True), (Settings(fire_lead=0), False),
                             (Settings(fire_lead_most="1s"), False)):  # fmt: skip
        driver_ = next(driving(tmp_path / str(id(settings)), settings=settings))
        rule = driver_.processor.logic.leads.rule
        assert rule.adapts is adapts
        assert (rule.least_ms, rule.most_ms) == (settings.fire_lead, settings.fire_lead_most)
        driver_.close()
    assert Settings().fire_lead_most == 10_000
    with pytest.raises(ValueError, match="fire_lead_most"):
        Settings(fire_lead_most="11s")
