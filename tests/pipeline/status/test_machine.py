"""The state machine of docs/lifecycle.md: every legal transition, the illegal ones, fencing."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._pipeline.serde import JobState
from jobstream._pipeline.status.machine import (
    CRON_ONLY,
    KINDS,
    OUTCOMES,
    TABLE,
    Verdict,
    transition,
)
from jobstream._pipeline.status.state import FINISHED_KEPT, Cancellation, JobRecord
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0

S = JobState
JOB = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
E1, E2 = T0, T0 + 60_000
MINUTE = 60_000


def record(state: JobState, **fields: Any) -> JobRecord:
    return JobRecord(job_id=JOB, state=state, job_type="data.process", owner="tests", **fields)


def event_of(kind: str, epoch: int = E1) -> dict[str, Any]:
    """An event of ``kind`` for the current execution (epoch ``epoch``)."""
    run = ev.execution(JOB, epoch=epoch)
    if kind == "FIRED":
        return ev.fired(run)
    if kind in OUTCOMES:
        return ev.outcome(kind, run)
    if kind == "RETRY_SCHEDULED":
        return ev.retry_scheduled(run, retry_at_ms=epoch + 5000)
    return ev.lifecycle(kind, JOB, at_ms=epoch, epoch=epoch if kind == "LOST" else 0,
                     execution_id=run["execution_id"] if kind == "LOST" else None,
                     scheduled_at_ms=epoch + 1000)  # fmt: skip


def fold(*events: dict[str, Any], start: JobRecord | None = None) -> JobRecord | None:
    """Apply ``events`` in order, failing on any that is not applied."""
    current = start
    for event in events:
        decision = transition(current, event)
        assert decision.verdict is Verdict.APPLIED, (event["kind"], decision.reason)
        current = decision.record
    return current


# -- the table ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "kind", "target"),
    [(state, kind, target) for (state, kind), target in TABLE.items()],
    ids=[f"{state.value if state else 'NEW'}+{kind}" for state, kind in TABLE],
)
def test_every_legal_transition(state: JobState | None, kind: str, target: JobState) -> None:
    before = None if state is None else record(state, epoch=E1)
    decision = transition(before, event_of(kind))
    assert decision.verdict is Verdict.APPLIED, decision.reason
    assert decision.state is target


def test_the_table_is_the_contract() -> None:
    """Spot checks against docs/lifecycle.md, cell by cell, for the less obvious rows."""
    assert TABLE[(S.RUNNING, "HEARTBEAT")] is S.RUNNING
    assert TABLE[(S.RUNNING, "LOST")] is S.FAILED_RETRYING
    assert TABLE[(S.QUEUED, "SUCCEEDED")] is S.SUCCEEDED
    assert TABLE[(S.SUCCEEDED, "FIRED")] is S.QUEUED
    assert TABLE[(S.DEAD_LETTERED, "RETRY_SCHEDULED")] is S.FAILED_RETRYING
    assert TABLE[(S.PAUSED, "RESUMED")] is S.SCHEDULED
    assert TABLE[(S.PAUSED, "PAUSED")] is S.PAUSED, "its schedule updated while it stays paused"
    non_terminal = set(S) - {S.SUCCEEDED, S.DEAD_LETTERED, S.CANCELLED, S.EXPIRED, S.COLLAPSED}
    assert {s for (s, kind) in TABLE if kind == "SCHEDULED"} == non_terminal | {None}
    assert not [key for key in TABLE if key[0] is S.CANCELLED]


ILLEGAL = [
    (S.CANCELLED, "STARTED", "a cancelled job never runs again"),
    (S.CANCELLED, "SCHEDULED", "nor is it rescheduled"),
    (S.CANCELLED, "RESUMED", "nor resumed"),
    (S.SUCCEEDED, "SCHEDULED", "a finished job is not rescheduled"),
    (S.SUCCEEDED, "FAILED", "an outcome after the job succeeded"),
    (S.SUCCEEDED, "HEARTBEAT", "no run holds a lease"),
    (S.DEAD_LETTERED, "STARTED", "a dead letter runs only after a redrive fired it"),
    (S.DEAD_LETTERED, "SUCCEEDED", "an outcome after the job was dead-lettered"),
    (S.FAILED_RETRYING, "SUCCEEDED", "the run already failed"),
    (S.FAILED_RETRYING, "HEARTBEAT", "no run holds a lease"),
    (S.SCHEDULED, "HEARTBEAT", "nothing runs yet"),
    (S.SCHEDULED, "SUCCEEDED", "nothing ran"),
    (S.SCHEDULED, "RESUMED", "not paused"),
    (S.SCHEDULED, "DEAD_LETTERED", "nothing failed"),
    (S.QUEUED, "HEARTBEAT", "heartbeats follow STARTED"),
    (S.QUEUED, "PAUSED", "only a schedule waiting for its time is paused"),
    (S.RUNNING, "PAUSED", "only a schedule waiting for its time is paused"),
    (S.RUNNING, "RESUMED", "not paused"),
    (S.PAUSED, "FIRED", "a paused schedule does not fire"),
    (S.PAUSED, "STARTED", "a paused schedule does not run"),
    (None, "SUCCEEDED", "an outcome of a job never seen"),
    (None, "HEARTBEAT", "a heartbeat of a job never seen"),
    (None, "RESUMED", "a job never seen was never paused"),
    (S.SCHEDULED, "UNKNOWN", "a kind from a newer writer"),
]


@pytest.mark.parametrize(("state", "kind", "why"), ILLEGAL,
                         ids=[f"{s.value if s else 'NEW'}+{k}" for s, k, _ in ILLEGAL])  # fmt: skip
def test_illegal_transitions_are_rejected(state: JobState | None, kind: str, why: str) -> None:
    before = None if state is None else record(state, epoch=E1)
    decision = transition(before, event_of(kind))
    assert decision.verdict is Verdict.ILLEGAL, why
    assert decision.record == before
    assert kind in decision.reason


def test_every_pair_outside_the_table_is_illegal() -> None:
    states: list[JobState | None] = [None, *S]
    for state in states:
        for kind in KINDS:
            if (state, kind) in TABLE:
                continue
            before = None if state is None else record(state, epoch=E1)
            decision = transition(before, event_of(kind))
            assert decision.verdict is Verdict.ILLEGAL, (state, kind)
            assert decision.record == before


@pytest.mark.parametrize(("state", "kind"), sorted(CRON_ONLY))
def test_cron_only_transitions_are_illegal_for_a_known_one_off_job(state: JobState,
                                                                   kind: str) -> None:  # fmt: skip
    assert transition(record(state, epoch=E1, recurring=False), event_of(kind, E2)).verdict \
        is Verdict.ILLEGAL  # fmt: skip
    assert transition(record(state, epoch=E1, recurring=True), event_of(kind, E2)).verdict \
        is Verdict.APPLIED  # fmt: skip


def test_duplicate_records_are_ignored_and_unknown_kinds_illegal() -> None:
    assert transition(record(S.RUNNING), ev.lifecycle("DUPLICATE", JOB)).verdict is Verdict.IGNORED
    assert transition(None, ev.lifecycle("UNKNOWN", JOB)).verdict is Verdict.ILLEGAL


# -- epoch fencing ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(OUTCOMES))
def test_an_outcome_of_a_stale_epoch_is_a_duplicate(kind: str) -> None:
    current = record(S.RUNNING, epoch=E2, execution_id="x2")
    decision = transition(current, event_of(kind, epoch=E1))
    assert decision.verdict is Verdict.DUPLICATE
    assert "stale epoch" in decision.reason
    assert decision.record == current


def test_fired_with_a_newer_epoch_sets_the_current_epoch() -> None:
    run = ev.execution(JOB, epoch=E2, attempt=2)
    after = fold(ev.fired(run), start=record(S.FAILED_RETRYING, epoch=E1, attempt=1))
    assert after is not None
    assert (after.state, after.epoch, after.attempt) == (S.QUEUED, E2, 2)
    assert after.execution_id == run["execution_id"]
    assert after.fires == 0, "a retry is not a new run"


def test_fired_of_an_older_epoch_is_a_duplicate_and_a_superseded_lost_is_ignored() -> None:
    current = record(S.QUEUED, epoch=E2)
    assert transition(current, event_of("FIRED", E1)).verdict is Verdict.DUPLICATE
    assert transition(current, event_of("LOST", E1)).verdict is Verdict.IGNORED


def test_started_again_in_the_same_epoch_is_a_redelivery_to_another_worker() -> None:
    run = ev.execution(JOB, epoch=E1)
    after = fold(ev.outcome("STARTED", run, worker="w1"), ev.outcome("STARTED", run, worker="w2"),
                 start=record(S.QUEUED, epoch=E1))  # fmt: skip
    assert after is not None
    assert (after.state, after.worker_id) == (S.RUNNING, "w2")


def test_a_second_start_of_a_running_execution_names_the_first_worker() -> None:
    run = ev.execution(JOB, epoch=E1)
    running = fold(ev.outcome("STARTED", run, worker="w1"), start=record(S.QUEUED, epoch=E1))
    again = transition(running, ev.outcome("STARTED", run, worker="w1"))
    assert (again.verdict, again.rerun_of) == (Verdict.APPLIED, "w1")
    assert run["execution_id"] in again.reason
    first = transition(record(S.QUEUED, epoch=E1), ev.outcome("STARTED", run, worker="w1"))
    assert first.rerun_of is None, "a first start is no second run"


def test_a_zombie_outcome_after_the_retry_fired_is_a_duplicate() -> None:
    first, second = ev.execution(JOB, epoch=E1), ev.execution(JOB, epoch=E2, attempt=2)
    after = fold(
        ev.scheduled(JOB), ev.fired(first), ev.outcome("STARTED", first, worker="a"),
        ev.lifecycle("LOST", JOB, epoch=E1, execution_id=first["execution_id"], execution=first),
        ev.retry_scheduled(first, retry_at_ms=E2), ev.fired(second), ev.outcome("STARTED", second),
    )  # fmt: skip
    zombie = transition(after, ev.outcome("SUCCEEDED", first, worker="a", result="1"))
    assert zombie.verdict is Verdict.DUPLICATE
    assert zombie.record == after
    done = fold(ev.outcome("SUCCEEDED", second, result="2"), start=after)
    assert done is not None
    assert (done.state, done.result, done.attempt) == (S.SUCCEEDED, "2", 2)


# -- duplicates by execution id -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["SUCCEEDED", "FAILED", "TIMED_OUT"])
def test_a_second_outcome_of_a_finished_execution_is_a_duplicate(kind: str) -> None:
    run = ev.execution(JOB, epoch=E1)
    after = fold(ev.fired(run), ev.outcome("STARTED", run), ev.outcome(kind, run),
                 start=record(S.SCHEDULED))  # fmt: skip
    for again in ("SUCCEEDED", "FAILED", "HEARTBEAT", "STARTED"):
        decision = transition(after, ev.outcome(again, run, worker="w2"))
        assert decision.verdict is Verdict.DUPLICATE, again
        assert "already finished" in decision.reason


def test_the_outcome_of_a_lost_execution_is_a_duplicate() -> None:
    run = ev.execution(JOB, epoch=E1)
    lost = ev.lifecycle("LOST", JOB, epoch=E1, execution_id=run["execution_id"], execution=run)
    after = fold(ev.fired(run), ev.outcome("STARTED", run), lost, start=record(S.SCHEDULED))
    assert after is not None
    assert after.state is S.FAILED_RETRYING
    assert after.last_error == {"error_type": "LeaseExpired",
                                "message": "no heartbeat within the lease: the worker "
                                           "running it died or stalled"}  # fmt: skip
    assert transition(after, ev.outcome("SUCCEEDED", run)).verdict is Verdict.DUPLICATE


def test_finished_execution_ids_are_bounded() -> None:
    current: JobRecord | None = record(S.SCHEDULED, recurring=True, cron=ev.every_minute())
    for n in range(FINISHED_KEPT + 5):
        run = ev.execution(JOB, epoch=E1 + n * MINUTE, cron=ev.every_minute())
        current = fold(ev.fired(run), ev.outcome("STARTED", run), ev.outcome("SUCCEEDED", run),
                       start=current)  # fmt: skip
    assert current is not None
    assert len(current.finished) == FINISHED_KEPT
    assert current.finished[-1] == run["execution_id"]


# -- what each event carries ----------------------------------------------------------------


def test_a_new_job_takes_its_identity_from_the_first_event() -> None:
    after = fold(ev.lifecycle("SCHEDULED", JOB, owner="acme", job_type="report.generate",
                           scheduled_at_ms=T0 + 5000))  # fmt: skip
    assert after is not None
    status = after.to_status()
    assert (status.state, status.owner, status.job_type) == (S.SCHEDULED, "acme", "report.generate")
    assert status.scheduled_at_ms == T0 + 5000


def test_failure_retry_and_dead_letter_then_a_redrive() -> None:
    run = ev.execution(JOB, epoch=E1)
    failed = fold(ev.scheduled(JOB), ev.fired(run), ev.outcome("STARTED", run),
                  ev.outcome("FAILED", run))  # fmt: skip
    assert failed is not None
    assert failed.last_error == {"error_type": "ValueError", "message": "boom"}
    retrying = fold(ev.retry_scheduled(run, retry_at_ms=E2), start=failed)
    assert retrying is not None
    assert (retrying.state, retrying.attempt, retrying.scheduled_at_ms) == (
        S.FAILED_RETRYING, 2, E2)  # fmt: skip
    error = ev.outcome("FAILED", run)["error"]
    dead = fold(ev.lifecycle("DEAD_LETTERED", JOB, epoch=E1, error=error), start=retrying)
    assert dead is not None
    assert dead.state is S.DEAD_LETTERED
    redriven = fold(ev.fired(ev.execution(JOB, epoch=E2 + 1, attempt=3)), start=dead)
    assert redriven is not None
    assert (redriven.state, redriven.last_error) == (S.QUEUED, None)


def test_succeeded_carries_the_result_and_clears_the_error() -> None:
    run = ev.execution(JOB, epoch=E1)
    failed_before = record(S.RUNNING, epoch=E1, last_error={"error_type": "X", "message": "m"})
    after = fold(ev.outcome("SUCCEEDED", run, result='{"rows": 3}'), start=failed_before)
    assert after is not None
    assert (after.state, after.result, after.last_error) == (S.SUCCEEDED, '{"rows": 3}', None)
    assert after.runs == 0, "runs count recurring jobs only"
    assert run["execution_id"] in after.finished


# -- recurring jobs ---------------------------------------------------------------------------


def test_a_recurring_job_goes_back_to_scheduled_after_success() -> None:
    cron = ev.every_minute()
    first = ev.execution(JOB, epoch=E1, cron=cron)
    after = fold(ev.scheduled(JOB, due_ms=E1), ev.fired(first), ev.outcome("STARTED", first),
                 ev.outcome("SUCCEEDED", first, at_ms=E1 + 1500))  # fmt: skip
    assert after is not None
    assert (after.state, after.runs, after.recurring) == (S.SCHEDULED, 1, True)
    assert after.scheduled_at_ms == after.next_fire_at_ms == E1 + MINUTE - E1 % MINUTE
    second = ev.execution(JOB, epoch=E2, cron=cron)
    again = fold(ev.fired(second), ev.outcome("STARTED", second), ev.outcome("SUCCEEDED", second),
                 start=after)  # fmt: skip
    assert again is not None
    assert (again.state, again.runs, again.fires) == (S.SCHEDULED, 2, 2)


def test_a_recurring_job_whose_runs_are_used_up_ends_succeeded() -> None:
    cron = ev.every_minute(max_runs=2)
    current = None
    for epoch in (E1, E2):
        run = ev.execution(JOB, epoch=epoch, cron=cron)
        current = fold(ev.fired(run), ev.outcome("STARTED", run), ev.outcome("SUCCEEDED", run),
                       start=current or record(S.SCHEDULED))  # fmt: skip
    assert current is not None
    assert (current.state, current.runs, current.next_fire_at_ms) == (S.SUCCEEDED, 2, None)


def test_a_job_whose_spec_was_never_seen_ends_at_succeeded() -> None:
    run = ev.execution(JOB, epoch=E1, cron=ev.every_minute())
    after = fold(ev.scheduled(JOB), ev.fired(run), ev.outcome("SUCCEEDED", run))
    assert after is not None
    assert (after.state, after.recurring, after.runs) == (S.SUCCEEDED, None, 0)


def test_the_next_run_may_fire_while_the_previous_one_is_queued_or_running() -> None:
    cron = ev.every_minute()
    first, second = ev.execution(JOB, epoch=E1, cron=cron), ev.execution(JOB, epoch=E2, cron=cron)
    running = fold(ev.scheduled(JOB), ev.fired(first), ev.outcome("STARTED", first))
    after = fold(ev.fired(second), start=running)
    assert after is not None
    assert (after.state, after.epoch, after.fires) == (S.QUEUED, E2, 2)


# -- cancels -------------------------------------------------------------------------------


def worker_cancelled(run: dict[str, Any], *, at_ms: int) -> dict[str, Any]:
    """The CANCELLED a worker reports for ``run``, stopped by a cancel from the CLI."""
    return ev.outcome("CANCELLED", run, at_ms=at_ms, execution=run, requested_by="cli:ann@box",
                      detail="wrong month")  # fmt: skip


def test_a_worker_cancels_a_running_job_naming_who_and_why() -> None:
    run = ev.execution(JOB, epoch=E1)
    running = fold(ev.fired(run), ev.outcome("STARTED", run))
    done = fold(worker_cancelled(run, at_ms=E1 + 500), start=running)
    assert done is not None and done.state is S.CANCELLED
    assert done.cancellation == Cancellation(by="cli:ann@box", reason="wrong month",
                                             at_ms=E1 + 500, worker_id="w1")  # fmt: skip
    assert done.to_status().cancellation is not None
    late = transition(done, ev.outcome("SUCCEEDED", run, at_ms=E1 + 900))
    assert late.verdict is Verdict.DUPLICATE, "the run it stopped has finished"


def test_a_worker_cancels_a_queued_job_it_never_started() -> None:
    run = ev.execution(JOB, epoch=E1)
    done = fold(ev.fired(run), worker_cancelled(run, at_ms=E1 + 5))
    assert done is not None and done.state is S.CANCELLED and run["execution_id"] in done.finished


def test_a_worker_cancel_of_an_older_run_is_a_duplicate() -> None:
    old, new = ev.execution(JOB, epoch=E1), ev.execution(JOB, epoch=E2, attempt=2)
    running = fold(
        ev.fired(new), ev.outcome("STARTED", new), start=record(S.FAILED_RETRYING, epoch=E1)
    )
    assert transition(running, worker_cancelled(old, at_ms=E2 + 1)).verdict is Verdict.DUPLICATE


def test_the_stopped_run_of_a_cancelled_schedule_changes_nothing() -> None:
    run = ev.execution(JOB, epoch=E1, cron=ev.every_minute())
    cancelled = fold(ev.lifecycle("CANCELLED", JOB, at_ms=E1 + 10, detail="done with it"),
                     start=record(S.RUNNING, epoch=E1))  # fmt: skip
    assert cancelled is not None
    assert cancelled.cancellation == Cancellation(by=None, reason="done with it",
                                                  at_ms=E1 + 10, worker_id=None)  # fmt: skip
    decision = transition(cancelled, worker_cancelled(run, at_ms=E1 + 20))
    assert decision.verdict is Verdict.IGNORED and decision.record == cancelled


def test_a_wait_step_waits_for_its_signal_and_ends_on_it_or_expires() -> None:
    job = "01JD3W6Q8Z5X7M2K4N9P0R1WAIT"
    begun = transition(None, ev.scheduled(job)).record
    waiting = transition(begun, ev.lifecycle("WAITING", job, scheduled_at_ms=T0 + MINUTE,
                                             waiting_for=["approved"])).record  # fmt: skip
    assert waiting is not None and waiting.state is S.WAITING
    assert (waiting.waiting_for, waiting.scheduled_at_ms) == (("approved",), T0 + MINUTE)
    done = transition(waiting, ev.lifecycle("SUCCEEDED", job, result='{"ok": true}')).record
    assert done is not None and (done.state, done.result) == (S.SUCCEEDED, '{"ok": true}')
    assert done.waiting_for == ()

    expired = transition(waiting, ev.lifecycle("EXPIRED", job, error={
        "attempt": 1, "error_type": "WaitTimedOut", "message": "no signal", "at_ms": T0,
        "retryable": False}))  # fmt: skip
    assert expired.record is not None and expired.record.state is S.EXPIRED
    assert expired.record.last_error == {"error_type": "WaitTimedOut", "message": "no signal"}
    assert transition(expired.record, ev.lifecycle("SUCCEEDED", job)).verdict is Verdict.ILLEGAL


def test_expired_ends_a_job_with_its_reason_and_fences_the_execution_it_names() -> None:
    run = ev.execution(JOB, epoch=E1)
    error = {"attempt": 1, "error_type": "QueueLimitExceeded", "message": "no worker",
             "traceback": None, "retryable": False, "at_ms": E1 + 1, "worker_id": None}
    expired = ev.lifecycle("EXPIRED", JOB, at_ms=E1 + 1, attempt=1, epoch=E1,
                           execution_id=run["execution_id"], error=error)  # fmt: skip
    after = fold(ev.scheduled(JOB), ev.fired(run), expired)
    assert after is not None and after.state is S.EXPIRED
    assert after.last_error == {"error_type": "QueueLimitExceeded", "message": "no worker"}
    assert after.scheduled_at_ms is None
    assert transition(after, ev.outcome("STARTED", run)).verdict is Verdict.DUPLICATE
    superseded = transition(record(S.QUEUED, epoch=E2), expired)
    assert superseded.verdict is Verdict.IGNORED, "an older attempt's expiry"
    bare = fold(ev.scheduled(JOB), ev.lifecycle("EXPIRED", JOB, detail="deadline"))
    assert bare is not None and bare.state is S.EXPIRED
    assert bare.last_error == {"error_type": "Expired",
                               "message": "the job gave up on time: a deadline or a limit passed"}


def test_a_job_held_on_its_key_stays_queued_naming_the_key_until_it_starts() -> None:
    run = ev.execution(JOB, epoch=E1)
    keys = {"concurrency_key": "customer-42", "concurrency_limit": 2}
    first = ev.lifecycle("SCHEDULED", JOB, scheduled_at_ms=E1, job_keys=keys)
    held = ev.lifecycle("HELD", JOB, at_ms=E1 + 1, epoch=E1, execution_id=run["execution_id"],
                        held_by="concurrency:customer-42", waiting_for=["A", "B"])  # fmt: skip
    waiting = fold(first, ev.fired(run), held)
    assert waiting is not None and waiting.state is S.QUEUED
    assert waiting.keys == {"concurrency": {"key": "customer-42", "limit": 2}}
    assert (waiting.held_by, waiting.waiting_for) == ("concurrency:customer-42", ("A", "B"))
    started = fold(ev.outcome("STARTED", run), start=waiting)
    assert started is not None and started.state is S.RUNNING
    assert (started.held_by, started.waiting_for) == (None, ())
    assert started.keys == waiting.keys, "the keys stay"
    assert transition(record(S.CANCELLED, epoch=E1), held).verdict is Verdict.ILLEGAL


def test_a_collapsed_submission_ends_naming_the_job_it_runs_as() -> None:
    collapsed = ev.lifecycle("COLLAPSED", JOB, joined_job_id="01JD3W6Q8Z5X7M2K4N9P0RRUNX")
    for before in (None, record(S.SCHEDULED, scheduled_at_ms=E1), record(S.QUEUED, epoch=E1)):
        after = transition(before, collapsed).record
        assert after is not None and after.state is S.COLLAPSED
        assert (after.joined_job_id, after.scheduled_at_ms) == ("01JD3W6Q8Z5X7M2K4N9P0RRUNX", None)
        assert transition(after, event_of("FIRED")).verdict is Verdict.ILLEGAL
    assert transition(record(S.SUCCEEDED), collapsed).verdict is Verdict.ILLEGAL
