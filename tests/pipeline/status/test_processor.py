"""The status processor on real RocksDB files, with a clock the test controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.params import STATUS_PARAMS_INLINE_BYTES, params_digest
from jobstream._pipeline.model.records import JobLifecycle, evolve, plain
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event, JobState, encode_status, make_serde
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.record import RECORD_HEADER
from jobstream._pipeline.status.state import JobRecord, StatusState
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.topics import Topics
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.jobs import submitted
from tests.support.status import (
    JOB,
    LEASE,
    OTHER,
    PARTITION,
    StatusDriver,
    lifecycles,
    status_driver,
    statuses,
)

S = JobState
E1, E2 = T0, T0 + 60_000


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path)
    yield driver
    driver.close()


def start_run(driver: StatusDriver, epoch: int = E1, worker: str = "w1",
              attempt: int = 1) -> dict[str, Any]:  # fmt: skip
    run = ev.execution(JOB, epoch=epoch, attempt=attempt)
    driver.step(epoch, ev.fired(run), ev.outcome("STARTED", run, worker=worker))
    return run


def test_each_step_writes_the_latest_status(driver: StatusDriver) -> None:
    run = ev.execution(JOB, epoch=E1)
    emits = driver.step(T0, ev.scheduled(JOB), ev.fired(run), ev.outcome("STARTED", run))
    assert [s.state for s in statuses(emits)] == [S.SCHEDULED, S.QUEUED, S.RUNNING]
    assert all(e.topic == "jobs.status" and e.key == JOB.encode() for e in emits)
    final = statuses(emits)[-1]
    assert (final.epoch, final.attempt, final.updated_at_ms) == (E1, 1, T0)
    execution = driver.execution()
    assert execution is not None and plain(execution) == run


def test_a_heartbeat_renews_the_lease_and_writes_no_status(driver: StatusDriver) -> None:
    run = start_run(driver)
    assert driver.step(E1 + 20_000, ev.outcome("HEARTBEAT", run)) == []
    assert driver.step(E1 + 20_000 + LEASE - 1) == []
    lost = lifecycles(driver.step(E1 + 20_000 + LEASE))
    assert [e["kind"] for e in lost] == ["LOST"]


def test_an_expired_lease_emits_lost_with_the_execution(driver: StatusDriver) -> None:
    run = start_run(driver, worker="w1")
    assert driver.step(E1 + LEASE - 1) == []
    emits = driver.step(E1 + LEASE)
    [back, fenced] = emits
    assert (back.topic, back.key, back.partition) == ("jobs.events", JOB.encode(), 2)
    assert (fenced.topic, fenced.key) == ("jobs.status", JOB.encode()), (
        "the run fenced: its record, with the execution finished and none running")
    assert [name for name, _ in fenced.headers or ()] == [RECORD_HEADER]
    lost = lifecycles(emits)[0]
    assert lost["kind"] == "LOST"
    assert lost.execution is not None and plain(lost.execution) == run
    assert (lost["epoch"], lost["attempt"], lost["worker_id"]) == (E1, 1, "w1")
    assert lost["execution_id"] == run["execution_id"]
    assert lost["error"]["error_type"] == "LeaseExpired"
    assert lost["error"]["retryable"] is True
    assert driver.step(E1 + 10 * LEASE) == [], "a lease expires once"
    # The state moves when the LOST is read back from jobs.events; a late heartbeat before
    # that cannot renew the lease of a run declared lost.
    assert driver.record().state is S.RUNNING  # type: ignore[union-attr]
    assert driver.execution() is None
    late = lifecycles(driver.step(E1 + LEASE + 5, ev.outcome("HEARTBEAT", run)))
    assert [e["kind"] for e in late] == ["DUPLICATE"]
    read_back = statuses(driver.step(E1 + LEASE + 10, lost))
    assert [(s.state, s.last_error.error_type) for s in read_back] == [  # type: ignore[union-attr]
        (S.FAILED_RETRYING, "LeaseExpired")]  # fmt: skip
    assert driver.step(E1 + 10 * LEASE) == []


def test_a_stale_epoch_outcome_is_recorded_as_duplicate_and_not_applied(
    driver: StatusDriver,
) -> None:
    first = start_run(driver, worker="a")
    lost = lifecycles(driver.step(E1 + LEASE))[0]
    second = ev.execution(JOB, epoch=E2, attempt=2)
    driver.step(E2, lost, ev.retry_scheduled(first, retry_at_ms=E2), ev.fired(second),
                ev.outcome("STARTED", second, worker="b"))  # fmt: skip
    before = driver.record()
    assert before is not None
    assert (before.state, before.epoch, before.worker_id) == (S.RUNNING, E2, "b")

    emits = driver.step(E2 + 100, ev.outcome("SUCCEEDED", first, worker="a", result='"zombie"'))
    assert statuses(emits) == []
    [duplicate] = lifecycles(emits)
    assert duplicate["kind"] == "DUPLICATE"
    assert (duplicate["execution_id"], duplicate["epoch"], duplicate["worker_id"]) == (
        first["execution_id"], E1, "a")  # fmt: skip
    assert "stale epoch" in duplicate["detail"]
    assert driver.record() == before
    assert driver.processor.logic.counters.duplicates == 1

    done = statuses(driver.step(E2 + 200, ev.outcome("SUCCEEDED", second, worker="b", result="1")))
    assert [(s.state, s.result, s.attempt) for s in done] == [(S.SUCCEEDED, "1", 2)]


def test_a_redelivered_execution_started_again_is_applied_and_flagged(driver: StatusDriver) -> None:
    run = start_run(driver, worker="w1")
    emits = driver.step(E1 + 5_000, ev.outcome("STARTED", run, worker="w2"))
    [duplicate] = lifecycles(emits)
    assert (duplicate["kind"], duplicate["worker_id"]) == ("DUPLICATE", "w2")
    assert duplicate["execution_id"] == run["execution_id"]
    assert "w1" in duplicate["detail"] and "applied" in duplicate["detail"]
    [shown] = statuses(emits)  # the record is written again for its worker and execution
    assert (shown.state, shown.updated_at_ms) == (S.RUNNING, E1), (
        "still RUNNING: nothing a jobs.status reader sees changed")
    assert (driver.record().state, driver.record().worker_id) == (S.RUNNING, "w2")  # type: ignore[union-attr]
    assert driver.processor.logic.counters.duplicates == 1
    assert driver.step(E1 + 5_000 + LEASE - 1) == [], "the second start renewed the lease"


def test_illegal_transitions_are_counted_and_change_nothing(driver: StatusDriver) -> None:
    driver.step(T0, ev.scheduled(JOB), ev.lifecycle("CANCELLED", JOB))
    before = driver.record()
    run = ev.execution(JOB, epoch=E1)
    assert driver.step(E1, ev.outcome("STARTED", run), ev.outcome("SUCCEEDED", run)) == []
    assert driver.record() == before
    counters = driver.processor.logic.counters
    assert counters.illegal == 2
    assert counters.illegal_by_transition == {"CANCELLED + STARTED": 1, "CANCELLED + SUCCEEDED": 1}


def test_finished_jobs_are_purged_after_the_retention(tmp_path: Path) -> None:
    driver = status_driver(tmp_path, StatusPolicy(lease_ms=LEASE, retention_ms=1000))
    driver.step(T0, ev.scheduled(JOB), ev.lifecycle("CANCELLED", JOB), ev.scheduled(OTHER))
    assert driver.step(T0 + 999) == []
    assert driver.record() is not None
    [tombstone] = driver.step(T0 + 1000)
    assert (tombstone.topic, tombstone.key, tombstone.value) == ("jobs.status", JOB.encode(), None)
    assert not tombstone.headers, "a purge's tombstone is not marked moved: readers drop the job"
    assert driver.record() is None
    assert driver.record(OTHER) is not None
    assert driver.changelog[PARTITION][-1] == (JOB.encode(), None, ())
    assert driver.processor.logic.counters.purged == 1
    driver.close()


def restored(driver: StatusDriver, path: Path, at_ms: int | None = None) -> StatusDriver:
    """A second processor over a store restored from ``driver``'s changelog (jobs.status)
    at ``at_ms`` (by default the driver's clock)."""
    twin = status_driver(path)
    changelog = driver.changelog[PARTITION]
    tx = PartitionBatch(twin.store(PARTITION))
    state = StatusState(tx)
    for key, value, *headers in changelog:
        assert state.restore(key, value, headers[0] if headers else None, lease_ms=LEASE,
                             now_ms=driver.now_ms if at_ms is None else at_ms)  # fmt: skip
    tx.commit(len(changelog) - 1)
    assert state.flush() == [], "restoring writes nothing back"
    return twin


def everything(store: PartitionStore) -> list[tuple[bytes, bytes]]:
    return list(store.scan(b"\x01", b"\xff"))


def test_restore_from_the_changelog_rebuilds_the_same_state(
    driver: StatusDriver, tmp_path: Path
) -> None:
    run = start_run(driver, worker="w1")  # RUNNING, lease and execution stored
    other = ev.execution(OTHER, epoch=E1)
    driver.step(E1 + 10, ev.scheduled(OTHER), ev.fired(other), ev.outcome("STARTED", other),
                ev.outcome("FAILED", other), ev.lifecycle("CANCELLED", OTHER))  # fmt: skip
    driver.step(E1 + 20, ev.outcome("HEARTBEAT", run))
    twin = restored(driver, tmp_path / "restored")
    copy = twin.store(PARTITION)
    assert everything(copy) == everything(driver.store(PARTITION))
    assert copy.changelog_offset == driver.store(PARTITION).changelog_offset

    expiry = E1 + 20 + LEASE
    assert lifecycles(twin.step(expiry)) == lifecycles(driver.step(expiry))
    assert everything(copy) == everything(driver.store(PARTITION))
    twin.close()


def checkpoint(done: int, run: dict[str, Any]) -> dict[str, Any]:
    return {"state": orjson.dumps({"done": done}), "json": True, "attempt": run["attempt"],
            "execution_id": run["execution_id"], "at_ms": run["epoch"] + done}  # fmt: skip


def test_a_lost_run_hands_on_the_last_checkpoint_a_heartbeat_carried(
    driver: StatusDriver, tmp_path: Path
) -> None:
    run = start_run(driver, worker="w1")
    for done in (10, 20):
        driver.step(E1 + done, ev.outcome("HEARTBEAT", run, checkpoint=checkpoint(done, run)))
    driver.step(E1 + 30, ev.outcome("HEARTBEAT", run))  # a plain one keeps it
    twin = restored(driver, tmp_path / "restored")  # kept through a restore, too
    for processor in (driver, twin):
        lost = lifecycles(processor.step(E1 + 30 + LEASE))
        assert [e.kind for e in lost] == ["LOST"]
        assert lost[0].checkpoint is not None and plain(lost[0].checkpoint) == checkpoint(20, run)
        assert lost[0].execution is not None, "the execution too, as before"
    twin.close()
    assert not stored_checkpoints(driver), "dropped with the lost run"


def stored_checkpoints(driver: StatusDriver) -> list[bytes]:
    return [key for key, _ in everything(driver.store(PARTITION)) if key.startswith(b"c")]


def test_a_run_that_ends_drops_its_checkpoint(driver: StatusDriver) -> None:
    run = start_run(driver, worker="w1")
    driver.step(E1 + 10, ev.outcome("HEARTBEAT", run, checkpoint=checkpoint(10, run)))
    assert stored_checkpoints(driver) == [b"c" + JOB.encode()]
    driver.step(E1 + 20, ev.outcome("FAILED", run))
    assert stored_checkpoints(driver) == []
    start_run(driver, epoch=E2, attempt=2)
    lost = lifecycles(driver.step(E2 + LEASE))
    assert [e.kind for e in lost] == ["LOST"] and lost[0].checkpoint is None


# -- workflows -----------------------------------------------------------------------------


def in_workflow(event: JobLifecycle) -> JobLifecycle:
    return evolve(event, workflow_id="wf-1")


def steps_ended(emits: list[Output]) -> list[Output]:
    return [e for e in emits if isinstance(e.value, Event) and e.value.name == "StepEnded"]


def test_a_blocked_job_shows_the_parents_it_waits_for(driver: StatusDriver) -> None:
    blocked = ev.lifecycle("BLOCKED", JOB, waiting_for=[OTHER, "P2"], scheduled_at_ms=T0)
    assert statuses(driver.step(T0, in_workflow(blocked)))[-1].waiting_for == [OTHER, "P2"]
    narrowed = ev.lifecycle("BLOCKED", JOB, waiting_for=["P2"], scheduled_at_ms=T0)
    assert statuses(driver.step(T0 + 1, in_workflow(narrowed)))[-1].waiting_for == ["P2"]
    released = statuses(driver.step(T0 + 2, in_workflow(ev.scheduled(JOB, at_ms=T0 + 2))))[-1]
    assert (released.state, released.waiting_for) == (S.SCHEDULED, [])


def test_a_job_of_a_workflow_that_ends_is_announced_to_its_timers_once(
    driver: StatusDriver,
) -> None:
    run = {**ev.execution(JOB, epoch=E1), "workflow_id": "wf-1"}
    driver.step(E1, in_workflow(ev.fired(run)), in_workflow(ev.outcome("STARTED", run)))
    failed = driver.step(E1 + 5, in_workflow(ev.outcome("FAILED", run)),
                         in_workflow(ev.retry_scheduled(run, retry_at_ms=E1 + 1000)))  # fmt: skip
    assert steps_ended(failed) == [], "a retried job has not ended"
    again = {**ev.execution(JOB, epoch=E2, attempt=2), "workflow_id": "wf-1"}
    driver.step(E2, in_workflow(ev.fired(again)), in_workflow(ev.outcome("STARTED", again)))
    emits = driver.step(E2 + 9, in_workflow(ev.outcome("SUCCEEDED", again, result='{"n":1}')))
    [ended] = steps_ended(emits)
    assert (ended.topic, ended.key, ended.partition) == ("jobs.intake", b"wf-1", None)
    assert ended.urgent, "the children wait for it: its transaction does not wait"
    assert not any(e.urgent for e in emits if e is not ended), "the status waits as usual"
    assert plain(ended.value.data) == {"job_id": JOB, "workflow_id": "wf-1", "owner": "tests",
                                "outcome": "SUCCEEDED",
                                "ended_at_ms": E2 + 1, "result": '{"n":1}', "result_uri": None,
                                "detail": None}  # fmt: skip
    duplicate = driver.step(E2 + 10, in_workflow(ev.outcome("SUCCEEDED", again, result='{"n":1}')))
    assert steps_ended(duplicate) == []


def test_a_job_without_a_workflow_announces_nothing(driver: StatusDriver) -> None:
    run = start_run(driver)
    assert steps_ended(driver.step(E1 + 9, ev.outcome("SUCCEEDED", run))) == []
    cancelled = driver.step(T0, ev.lifecycle("CANCELLED", OTHER, workflow_id="wf-1", detail="x"))
    assert [e.value.data["outcome"] for e in steps_ended(cancelled)] == ["CANCELLED"]


def test_the_status_carries_the_submissions_creation_time_labels_and_parameters(
    driver: StatusDriver, tmp_path: Path
) -> None:
    """The timers' SCHEDULED (written as Avro by the real writer) into the real processor."""

    timers = ProcessorDriver(TimerProcessor(Settings()), tmp_path / "timers", now_ms=T0)
    try:
        job = submitted(now_ms=T0, job_id=JOB, params={"month": "2024-10"})
        job.data["spec"]["labels"] = {"team": "billing"}
        emits = timers.pipe(Topics(Settings()).intake, job)
    finally:
        timers.close()
    serialize, deserialize = make_serde(None)
    (first,) = [e.value for e in emits if isinstance(e.value, Event)]
    event = deserialize(serialize(first))
    status = statuses(driver.step(T0, event.data))[-1]
    assert status.created_at_ms == job.data["submitted_at_ms"]
    assert status.labels == {"team": "billing"}
    assert status.params == '{"month":"2024-10"}'
    assert status.params_bytes == len(status.params)
    assert status.params_sha256 is not None
    assert status.params_uri is None, "inline parameters need no URI"
    run = ev.execution(JOB, epoch=E1)
    later = statuses(driver.step(E1, ev.fired(run), ev.outcome("STARTED", run)))[-1]
    assert (later.created_at_ms, later.labels) == (status.created_at_ms, status.labels)


def test_parameters_over_the_inline_limit_travel_as_digest_size_and_uri(
    driver: StatusDriver, tmp_path: Path
) -> None:
    timers = ProcessorDriver(TimerProcessor(Settings()), tmp_path / "timers", now_ms=T0)
    try:
        big = {"rows": "x" * STATUS_PARAMS_INLINE_BYTES}
        emits = timers.pipe(Topics(Settings()).intake, submitted(now_ms=T0, job_id=JOB,
                                                                 params=big))  # fmt: skip
    finally:
        timers.close()
    (first,) = [e.value for e in emits if isinstance(e.value, Event)]
    status = statuses(driver.step(T0, first.data))[-1]
    text = orjson.dumps(big)
    assert status.params is None
    assert (status.params_bytes, status.params_sha256) == (len(text), params_digest(text))
    assert status.params_uri == f"/api/v1/jobs/{JOB}/params"
    assert orjson.loads(encode_status(status))["params_uri"] == status.params_uri


def test_a_job_first_met_at_its_execution_takes_labels_and_parameters_from_its_spec(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=E1)
    status = statuses(driver.step(E1, ev.outcome("STARTED", run)))[-1]
    assert status.params == run["spec"]["params"]
    assert status.labels == run["spec"]["labels"]
    assert status.created_at_ms is None


def test_a_record_written_before_the_summary_fields_still_decodes() -> None:
    old = JobRecord(job_id=JOB, state=S.SCHEDULED, job_type="t", owner="o").encode()
    assert b"labels" not in old and b"params" not in old
    record = JobRecord.decode(old)
    assert (record.labels, record.params, record.created_at_ms) == (None, None, None)
    status = record.to_status()
    assert (status.labels, status.params_sha256) == (None, None)
