"""The timer processor on real RocksDB files, with a clock the test controls."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.commands import trigger_event
from jobstream._pipeline.model.records import plain, typed
from jobstream._pipeline.model.time_keys import due_upper_bound, encode_schedule_key
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.timers.intake import checked
from jobstream._pipeline.timers.state import TimerState
from tests.support.jobs import cancelled, cron_schedule, schedule_changed, submitted
from tests.support.timers import MINUTE, T0, TOPICS, TimersDriver, executions, kinds, timers_driver


def test_one_off_fires_at_its_time_and_not_before(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 5000, priority="HIGH")
    assert kinds(driver.step(T0, job)) == ["SCHEDULED"]
    assert driver.step(T0 + 4999) == []
    emits = driver.step(T0 + 5003)
    assert kinds(emits) == ["ExecutionRequested", "FIRED"]
    run = executions(emits)[0]
    assert emits[0].topic == "jobs.exec.data.process.high"
    assert emits[0].key == job.data["job_id"].encode()
    assert (run["scheduled_at_ms"], run["fired_at_ms"], run["attempt"]) == (T0 + 5000, T0 + 5003, 1)
    assert emits[1].value.data["lateness_ms"] == 3
    assert driver.step(T0 + 10_000) == []


def test_state_survives_reopening_the_files(driver: TimersDriver) -> None:
    driver.step(T0, submitted(now_ms=T0, run_at_ms=T0 + 1000))
    driver.reopen()
    assert len(executions(driver.step(T0 + 1000))) == 1


def test_same_job_id_twice_is_one_job(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 1000)
    assert kinds(driver.step(T0, job, job)) == ["SCHEDULED"]
    assert kinds(driver.step(T0 + 10, job)) == []
    assert len(executions(driver.step(T0 + 1000))) == 1


def test_idempotent_job_resubmitted_after_firing_stays_a_no_op(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 1000, idempotency_key="nightly-2026-12-23")
    driver.step(T0, job)
    assert len(executions(driver.step(T0 + 1000))) == 1
    assert driver.step(T0 + 2000, job) == []
    assert executions(driver.step(T0 + 3000)) == []


def test_cancel_before_firing(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 1000)
    driver.step(T0, job)
    assert kinds(driver.step(T0 + 500, cancelled(job.data["job_id"], now_ms=T0))) == ["CANCELLED"]
    assert driver.step(T0 + 2000) == []


def test_a_cancel_after_firing_asks_the_workers_to_stop_the_run(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 1000)
    driver.step(T0, job)
    run = executions(driver.step(T0 + 1000))[0]
    cancel = cancelled(job.data["job_id"], now_ms=T0 + 1400)
    cancel.data["requested_by"] = "cli:ann@box"
    emits = driver.step(T0 + 1500, cancel)
    assert kinds(emits) == ["CancelRequested"], "no CANCELLED: the worker's run ends it"
    assert emits[0].topic == TOPICS.control and emits[0].key == job.data["job_id"].encode()
    request = emits[0].value.data
    assert request["up_to_epoch"] == T0 + 1500 >= run["epoch"]
    assert (request["requested_by"], request["reason"], request["requested_at_ms"]) == (
        "cli:ann@box", "test", T0 + 1400)  # fmt: skip


def test_a_cancelled_schedule_ends_and_stops_its_run_under_way(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, cron=cron_schedule("* * * * *"))
    driver.step(T0, job)
    emits = driver.step(T0 + 10, cancelled(job.data["job_id"], now_ms=T0 + 10))
    assert kinds(emits) == ["CANCELLED", "CancelRequested"]
    assert emits[0].value.data["detail"] == "test"


def test_cron_fires_each_run_and_moves_on(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, cron=cron_schedule("* * * * *", max_runs=3))
    start = T0 - T0 % MINUTE  # on a minute boundary
    emits = driver.step(start + 1, job)
    assert emits[0].value.data["scheduled_at_ms"] == start + MINUTE
    fired = []
    for minute in range(1, 6):
        fired += [
            run["scheduled_at_ms"] for run in executions(driver.step(start + minute * MINUTE))
        ]
    assert fired == [start + MINUTE, start + 2 * MINUTE, start + 3 * MINUTE]


def test_pause_and_resume_a_schedule(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, cron=cron_schedule("* * * * *"))
    start = T0 - T0 % MINUTE
    driver.step(start + 1, job)
    assert kinds(
        driver.step(start + 2, schedule_changed(job.data["job_id"], "PAUSE", now_ms=T0))
    ) == ["PAUSED"]
    assert driver.step(start + 3 * MINUTE) == []
    resumed = driver.step(
        start + 3 * MINUTE + 10, schedule_changed(job.data["job_id"], "RESUME", now_ms=T0)
    )
    assert kinds(resumed) == ["RESUMED"]
    assert resumed[0].value.data["scheduled_at_ms"] == start + 4 * MINUTE
    assert [r["scheduled_at_ms"] for r in executions(driver.step(start + 4 * MINUTE))] == [
        start + 4 * MINUTE
    ]


def test_update_changes_the_schedule_and_keeps_the_run_count(driver: TimersDriver) -> None:
    hour = 3_600_000
    start = T0 - T0 % hour
    job = submitted(now_ms=start, cron=cron_schedule("0 * * * *", max_runs=2))
    driver.step(start + 1, job)
    assert len(executions(driver.step(start + hour))) == 1
    update = schedule_changed(
        job.data["job_id"],
        "UPDATE",
        now_ms=start + hour,
        cron=cron_schedule("30 * * * *", max_runs=2),
        params='{"v": 2}',
    )
    emits = driver.step(start + hour + 1, update)
    assert emits[0].value.data["scheduled_at_ms"] == start + hour + 30 * MINUTE
    runs = executions(driver.step(start + hour + 30 * MINUTE))
    assert [r["spec"]["params"] for r in runs] == ['{"v": 2}']
    assert executions(driver.step(start + 3 * hour)) == []  # max_runs=2 reached


@pytest.mark.parametrize(
    ("policy", "expected_runs"), [("SKIP", 0), ("RUN_ONCE", 1), ("RUN_ALL", 5)]
)
def test_misfire_policy_after_downtime(
    driver: TimersDriver, policy: str, expected_runs: int
) -> None:
    every5 = 5 * MINUTE
    start = T0 - T0 % every5
    job = submitted(now_ms=start, cron=cron_schedule("*/5 * * * *", misfire=policy))
    driver.step(start + 1, job)
    # Down from just before the first run until 27.5 minutes later: runs at 5, 10, 15,
    # 20 and 25 were missed (the last one 2.5 minutes ago, beyond the 1-minute grace).
    emits = driver.step(start + 27 * MINUTE + 30_000)
    fired = [r["scheduled_at_ms"] for r in executions(emits)]
    assert len(fired) == expected_runs
    if policy == "RUN_ONCE":
        assert fired == [start + 25 * MINUTE]
    following = driver.step(start + 30 * MINUTE)
    assert [r["scheduled_at_ms"] for r in executions(following)] == [start + 30 * MINUTE]


def test_retry_fires_the_next_attempt(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0)
    retry = Event(
        "RetryScheduled",
        {
            "job_id": job.data["job_id"],
            "workflow_id": None,
            "attempt": 2,
            "epoch": 0,
            "retry_at_ms": T0 + 2000,
            "spec": job.data["spec"],
            "idempotency_key": None,
            "errors": [
                {
                    "attempt": 1,
                    "error_type": "IOError",
                    "message": "disk full",
                    "traceback": None,
                    "retryable": True,
                    "at_ms": T0,
                    "worker_id": "w1",
                }
            ],
        },
    )
    assert driver.step(T0, retry) == []
    runs = executions(driver.step(T0 + 2000))
    assert [(r["attempt"], r["scheduled_at_ms"]) for r in runs] == [(2, T0 + 2000)]
    assert [e["message"] for e in runs[0]["errors"]] == ["disk full"]
    assert runs[0]["execution_id"] != executions(driver.step(T0 + 2001, job))[0]["execution_id"]


def test_a_retry_hands_the_job_s_latest_checkpoint_to_its_execution(
    driver: TimersDriver, tmp_path: Path
) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0)
    saved = {"state": b'{"done": 50}', "json": True, "attempt": 1, "execution_id": "x1",
             "at_ms": T0}  # fmt: skip
    retry = Event("RetryScheduled", {
        "job_id": job.data["job_id"], "workflow_id": None, "attempt": 2, "epoch": 0,
        "retry_at_ms": T0 + 2000, "spec": job.data["spec"], "idempotency_key": None,
        "errors": [], "resume_from": saved,
    })  # fmt: skip
    assert driver.step(T0, retry) == []
    driver.reopen()  # the entry is read back from its store
    [run] = executions(driver.step(T0 + 2000))
    assert run["attempt"] == 2 and plain(run["resume_from"]) == saved
    [first] = executions(driver.step(T0 + 2001, job))
    assert first["resume_from"] is None, "a job's own firing resumes from nothing"


def test_invalid_submission_is_refused_naming_the_field(driver: TimersDriver) -> None:
    bad = submitted(now_ms=T0, run_at_ms=T0, cron=None, job_type="Not A Type!")
    with pytest.raises(ValidationError) as caught:  # which the processor dead-letters
        checked(Event(bad.name, typed(bad.name, bad.data)), T0)
    assert caught.value.field == "spec.job_type"


def test_changelog_records_rebuild_the_same_state(driver: TimersDriver, tmp_path: Path) -> None:
    driver.step(
        T0, submitted(now_ms=T0, run_at_ms=T0 + 1000), submitted(now_ms=T0, run_at_ms=T0 + 2000)
    )
    driver.step(T0 + 1000)
    rebuilt = PartitionStore(tmp_path / "rebuilt")
    state = TimerState(PartitionBatch(rebuilt))
    for key, value in driver.changelog[0]:
        state.restore(key, value)
    state.tx.commit(None)
    assert [e.due_ms for e in state.due(T0 + 10_000, 100)] == [T0 + 2000]


def retry_request(job: Event, attempt: int, at_ms: int) -> Event:
    return Event(
        "RetryScheduled",
        {
            "job_id": job.data["job_id"], "workflow_id": None, "attempt": attempt, "epoch": 0,
            "retry_at_ms": at_ms, "spec": job.data["spec"], "idempotency_key": None,
            "errors": [],
        },
    )  # fmt: skip


def test_a_retry_requested_twice_fires_once(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0)
    driver.step(T0, retry_request(job, 2, T0 + 1000), retry_request(job, 2, T0 + 1500))
    assert len(executions(driver.step(T0 + 2000))) == 1
    # A late third report of the same failure, after the retry fired, is no-op too.
    driver.step(T0 + 3000, retry_request(job, 2, T0 + 4000))
    assert executions(driver.step(T0 + 5000)) == []
    # The next attempt is accepted.
    driver.step(T0 + 6000, retry_request(job, 3, T0 + 7000))
    assert [r["attempt"] for r in executions(driver.step(T0 + 7000))] == [3]


def test_no_retry_after_a_cancel(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0)
    driver.step(T0, job)
    driver.step(T0 + 10, cancelled(job.data["job_id"], now_ms=T0))
    driver.step(T0 + 20, retry_request(job, 2, T0 + 1000))
    assert executions(driver.step(T0 + 2000)) == []


# -- JobTriggered: run a scheduled or recurring job now ---------------------------------


def test_a_one_off_job_fires_at_once_and_not_again_at_its_time(driver: TimersDriver) -> None:
    job = submitted(now_ms=T0, run_at_ms=T0 + 3_600_000)
    job_id = job.data["job_id"]
    driver.step(T0, job)
    emits = driver.step(T0 + 10, trigger_event(job_id, now_ms=T0 + 10, requested_by="cli:ann",
                                               reason="the report is late"))  # fmt: skip
    assert kinds(emits) == ["SCHEDULED", "ExecutionRequested", "FIRED"]
    asked = emits[0].value.data
    assert (asked["requested_by"], asked["detail"]) == ("cli:ann", "the report is late")
    assert executions(emits)[0]["fired_at_ms"] == T0 + 10
    assert driver.step(T0 + 3_600_000) == []
    # fired already: a second trigger has nothing to run
    assert driver.step(T0 + 3_600_010, trigger_event(job_id, now_ms=T0 + 3_600_010)) == []


def test_a_recurring_job_runs_now_and_keeps_its_schedule(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *", max_runs=3))
    job_id = job.data["job_id"]
    driver.step(start + 1, job)
    now = start + 20_000
    emits = driver.step(now, trigger_event(job_id, now_ms=now))
    (run,) = executions(emits)
    assert (run["scheduled_at_ms"], run["fired_at_ms"]) == (now, now)
    assert [r["scheduled_at_ms"] for r in executions(driver.step(start + MINUTE))] == [
        start + MINUTE
    ]
    # the trigger counted towards max_runs = 3: one more regular run, then none
    assert len(executions(driver.step(start + 2 * MINUTE))) == 1
    assert executions(driver.step(start + 3 * MINUTE)) == []


def test_the_last_allowed_run_triggered_ends_the_schedule(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *", max_runs=1))
    driver.step(start + 1, job)
    assert (
        len(executions(driver.step(start + 5, trigger_event(job.data["job_id"], now_ms=start + 5))))
        == 1
    )
    assert executions(driver.step(start + MINUTE)) == []


def test_a_paused_or_unknown_job_is_not_triggered(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *"))
    job_id = job.data["job_id"]
    driver.step(start + 1, job, schedule_changed(job_id, "PAUSE", now_ms=start + 1))
    assert driver.step(start + 2, trigger_event(job_id, now_ms=start + 2)) == []
    assert (
        driver.step(start + 3, trigger_event("01JD3W6Q8Z5X7M2K4N9P0R1S2T", now_ms=start + 3)) == []
    )


def test_updating_a_paused_schedule_leaves_it_paused(driver: TimersDriver) -> None:
    start = T0 - T0 % MINUTE
    job = submitted(now_ms=start, cron=cron_schedule("* * * * *"))
    job_id = job.data["job_id"]
    driver.step(start + 1, job, schedule_changed(job_id, "PAUSE", now_ms=start + 1))
    hourly = cron_schedule("0 * * * *")
    update = schedule_changed(job_id, "UPDATE", now_ms=start + 2, cron=hourly,
                              requested_by="api:acme")  # fmt: skip
    [still] = driver.step(start + 2, update)
    assert (still.value.data["kind"], still.value.data["requested_by"]) == ("PAUSED", "api:acme")
    assert still.value.data["detail"] == "schedule updated, still paused"
    assert executions(driver.step(start + 3 * MINUTE)) == []
    resumed = driver.step(
        start + 4 * MINUTE, schedule_changed(job_id, "RESUME", now_ms=start + 4 * MINUTE)
    )
    assert kinds(resumed) == ["RESUMED"]
    assert resumed[0].value.data["scheduled_at_ms"] % 3_600_000 == 0


def test_a_job_due_before_the_last_scan_still_fires(driver: TimersDriver) -> None:
    """Due scans start at the partition's floor, which rises as timers fire: a job then
    submitted late (due already) or due earlier than every pending one lowers it again."""
    first = submitted(now_ms=T0, run_at_ms=T0 + 5000)
    later = submitted(now_ms=T0, run_at_ms=T0 + 60_000)
    driver.step(T0, first, later)
    assert len(executions(driver.step(T0 + 5000))) == 1
    # the key that fired: the first found
    assert driver.processor.floors[0] == encode_schedule_key(T0 + 5000, first.data["job_id"])
    driver.step(T0 + 5500)
    assert driver.processor.floors[0] == due_upper_bound(T0 + 5500)  # none due up to now
    late = submitted(now_ms=T0 + 6000, run_at_ms=T0 + 1000)
    assert [r["scheduled_at_ms"] for r in executions(driver.step(T0 + 6000, late))] == [T0 + 1000]
    soon = submitted(now_ms=T0 + 7000, run_at_ms=T0 + 8000)
    driver.step(T0 + 7000, soon)
    assert driver.processor.floors[0] == due_upper_bound(T0 + 7000)
    assert [r["job_id"] for r in executions(driver.step(T0 + 8000))] == [soon.data["job_id"]]


def test_a_burst_due_in_one_millisecond_moves_the_floor_key_by_key(tmp_path: Path) -> None:
    """A burst larger than a batch fires over several transactions within one millisecond:
    each scan starts at the first key the one before found, not at the millisecond (which
    would walk every timer the burst fired before), and a job scheduled below the floor
    meanwhile (the same instant, an id sorting first) lowers it and still fires."""
    driver = timers_driver(tmp_path, punctuate_limit=10)
    burst = [submitted(now_ms=T0, run_at_ms=T0 + 5000, job_id=f"{i + 1:026d}") for i in range(25)]
    driver.step(T0, *burst)
    ids = [job.data["job_id"] for job in burst]
    fired = [r["job_id"] for r in executions(driver.step(T0 + 5000))]
    assert fired == ids[:10]
    assert driver.processor.floors[0] == encode_schedule_key(T0 + 5000, ids[0])
    fired += [r["job_id"] for r in executions(driver.advance())]
    assert driver.processor.floors[0] == encode_schedule_key(T0 + 5000, ids[10])
    first = submitted(now_ms=T0 + 5000, run_at_ms=T0 + 5000, job_id="0" * 26)
    fired += [r["job_id"] for r in executions(driver.step(T0 + 5000, first))]
    fired += [r["job_id"] for r in executions(driver.advance())]
    assert sorted(fired) == sorted([*ids, "0" * 26])  # every one, each once
    assert executions(driver.advance()) == []
    driver.close()


def test_the_floor_starts_over_when_a_partition_is_taken_again(driver: TimersDriver) -> None:
    driver.step(T0, submitted(now_ms=T0, run_at_ms=T0 + 5000))
    driver.step(T0 + 1000)
    assert driver.processor.floors[0] == due_upper_bound(T0 + 1000)
    driver.task.revoke([0])
    assert 0 not in driver.processor.floors
    driver.task.assign([0])
    assert len(executions(driver.step(T0 + 5000))) == 1


def test_a_job_fired_in_the_transaction_that_scheduled_it_leaves_no_changelog_record(
    driver: TimersDriver,
) -> None:
    now = submitted(now_ms=T0, run_at_ms=T0)
    emits = driver.pipe(TOPICS.intake, now, punctuate=True)
    assert kinds(emits) == ["SCHEDULED", "ExecutionRequested", "FIRED"]
    assert driver.changelog[0] == [], "its entry was put and deleted in one transaction"
    assert TimerState(PartitionBatch(driver.store())).get(now.data["job_id"]) is None

    later = submitted(now_ms=T0, run_at_ms=T0 + 1000)
    assert kinds(driver.pipe(TOPICS.intake, later, punctuate=True)) == ["SCHEDULED"]
    assert len(executions(driver.step(T0 + 1000))) == 1
    logged = [(key.decode(), value is None) for key, value in driver.changelog[0]]
    assert logged == [(later.data["job_id"], False), (later.data["job_id"], True)]

