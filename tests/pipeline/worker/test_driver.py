"""The worker's own logic with no broker (pipeline/worker/driver.py): claims, early
starts, timeouts, cancels, the quarantine, the drain, revocations and heartbeats, on a
test clock, with the app's handlers run on the real executor."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jobstream._pipeline.config import load_settings
from jobstream._pipeline.model.lifecycle import WORKER_STOPPED
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.driver import WorkerDriver
from tests.pipeline.worker.executions import execution_requested, suspect
from tests.pipeline.worker.support import (
    DriveWorker,
    HangingAsync,
    assert_cancelled,
    cancel_request,
)
from tests.support.waiting import wait_for


class Recorder:
    """An app whose data.process runs note the test clock of their driver when they
    begin (:attr:`began`, by execution id), then wait for ``gate``, if any."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.began: dict[str, int] = {}
        self.driver: WorkerDriver | None = None
        self.app = WorkerApp()

        @self.app.handler("data.process")
        def work(ctx: JobContext) -> str:
            assert self.driver is not None
            self.began[ctx.execution_id] = self.driver.clock.now_ms
            if gate is not None:
                gate.wait(60)
            return "done"

    def drive(self, drive: DriveWorker, **options: Any) -> WorkerDriver:
        self.driver = drive(self.app, **options)
        return self.driver


OneSlot = tuple[WorkerDriver, dict[str, int]]


@pytest.fixture
def one_slot(drive: DriveWorker, gate: threading.Event) -> OneSlot:
    """A driver of one slot whose data.process runs note when they begin (by execution id)
    and then wait for ``gate``."""
    recorder = Recorder(gate)
    return recorder.drive(drive, concurrency=1), recorder.began


def test_a_record_is_claimed_before_its_handler_runs(
    one_slot: OneSlot, gate: threading.Event
) -> None:
    driver, began = one_slot
    [execution_id] = driver.fire(execution_requested(due_ms=driver.clock.now_ms))
    driver.step()
    driver.run_until(lambda: execution_id in began, what="the handler to begin")
    assert driver.kinds(execution_id) == ["STARTED"], "its STARTED committed as it runs"
    assert driver.committed() == 1, "its offset committed with the STARTED"
    gate.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"]


def test_a_record_fetched_before_its_instant_starts_on_the_instant(drive: DriveWorker) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_ahead_s=1.0)
    began = recorder.began
    due = driver.clock.now_ms + 5000
    [execution_id] = driver.fire(execution_requested(due_ms=due))
    driver.step()
    assert len(driver.loop.lanes[0].early) == 1 and not driver.kinds(execution_id)
    driver.advance(3999)
    assert not driver.kinds(execution_id), "held until a claim-ahead before its instant"
    driver.advance(1)
    [started] = driver.events(execution_id, "STARTED")
    assert started["at_ms"] == due, "its STARTED tells its instant"
    assert len(driver.loop.inflight.ahead) == 1 and not driver.loop.inflight.slots
    driver.advance(990)
    assert execution_id not in began, "launched ahead, not begun"
    driver.advance(10)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    assert began[execution_id] == due


def test_a_sync_run_past_its_timeout_is_reported_and_holds_its_slot_until_it_returns(
    one_slot: OneSlot, gate: threading.Event
) -> None:
    driver, began = one_slot
    now = driver.clock.now_ms
    stuck, waiting = driver.fire(execution_requested(due_ms=now, timeout_ms=500),
                                 execution_requested(due_ms=now), partition=0)  # fmt: skip
    driver.step()
    driver.run_until(lambda: stuck in began, what="the handler to begin")
    driver.advance(499)
    assert driver.kinds(stuck) == ["STARTED"]
    driver.advance(1)
    [late] = driver.events(stuck, "TIMED_OUT")
    assert late["error"]["error_type"] == "Timeout" and late["error"]["retryable"] is True
    assert driver.loop.stats.running == 1, "the stuck thread still holds the only slot"
    assert not driver.kinds(waiting), "the next record waits for the slot"
    gate.set()
    driver.run_until(lambda: driver.events(waiting, "SUCCEEDED"), what="the next one's run")
    assert driver.kinds(stuck) == ["STARTED", "TIMED_OUT"], "the late result is ignored"


def test_an_async_run_is_cancelled_at_its_timeout(drive: DriveWorker) -> None:
    hanging = HangingAsync()
    began, cancelled = hanging.began, hanging.cancelled
    driver = drive(hanging.app)
    [execution_id] = driver.fire(execution_requested(job_type="image.render", timeout_ms=500,
                                                     due_ms=driver.clock.now_ms))  # fmt: skip
    driver.step()
    driver.run_until(began.is_set, what="the coroutine to begin")
    driver.advance(500)
    driver.run_until(lambda: driver.events(execution_id, "TIMED_OUT"), what="TIMED_OUT")
    assert cancelled.is_set()
    assert "0.5 s" in driver.events(execution_id, "TIMED_OUT")[0]["error"]["message"]


def test_a_cancel_before_the_claim_ends_the_record_never_started(drive: DriveWorker) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_ahead_s=0.2)  # held until 200 ms ahead
    began = recorder.began
    job = execution_requested(due_ms=driver.clock.now_ms + 8000)
    [execution_id] = driver.fire(job)
    driver.step()
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.advance(8000)
    [ended] = driver.events(execution_id, "CANCELLED")
    assert_cancelled(ended, "driver")
    assert driver.kinds(execution_id) == ["CANCELLED"] and not began


def test_a_cancel_after_the_claim_ends_a_run_claimed_ahead_never_launched(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive, claim_ahead_s=4.0)
    began = recorder.began
    job = execution_requested(due_ms=driver.clock.now_ms + 6000)
    [execution_id] = driver.fire(job)
    driver.advance(2000)
    assert driver.kinds(execution_id) == ["STARTED"], "claimed 4 s ahead"
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.step()
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"], "ended at once"
    driver.advance(5000)
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"] and not began
    assert not driver.loop.inflight.ahead and not driver.loop.inflight.slots


def test_a_cancel_stops_a_run_under_way(drive: DriveWorker) -> None:
    app = WorkerApp()
    saw: list[bool] = []
    began = threading.Event()

    @app.handler("data.process")
    def polite(ctx: JobContext) -> str:
        began.set()
        saw.append(ctx.wait_cancelled(60))
        return "stopped"

    driver = drive(app)
    job = execution_requested(due_ms=driver.clock.now_ms)
    [execution_id] = driver.fire(job)
    driver.step()
    driver.run_until(began.is_set, what="the handler to begin")
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.run_until(lambda: driver.events(execution_id, "CANCELLED"), what="CANCELLED")
    assert saw == [True], "the handler saw ctx.cancelled"
    assert_cancelled(driver.events(execution_id, "CANCELLED")[0], "driver")
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"]


def test_a_run_ignoring_its_cancel_is_reported_after_the_grace(
    drive: DriveWorker, gate: threading.Event
) -> None:
    recorder = Recorder(gate)
    driver = recorder.drive(drive, cancel_grace_s=2.0)
    began = recorder.began
    job = execution_requested(due_ms=driver.clock.now_ms)
    [execution_id] = driver.fire(job)
    driver.step()
    driver.run_until(lambda: execution_id in began, what="the handler to begin")
    driver.cancel(cancel_request(job, at_ms=driver.clock.now_ms))
    driver.step()
    driver.advance(1999)
    assert driver.kinds(execution_id) == ["STARTED"]
    driver.advance(1)
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"]
    assert driver.loop.stats.running == 1, "its slot stays taken until it returns"
    gate.set()
    driver.run_until(lambda: driver.loop.stats.running == 0, what="the slot back")
    assert driver.kinds(execution_id) == ["STARTED", "CANCELLED"]


def test_a_suspect_waits_for_the_runs_in_hand_and_then_runs_alone(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    gates = {"first": gate, "suspect": threading.Event()}
    running: set[str] = set()
    beside: list[set[str]] = []
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        name = ctx.params.get("name", "other")
        with lock:
            beside.append(set(running))
            running.add(name)
        if name in gates:
            gates[name].wait(60)
        with lock:
            running.discard(name)

    driver = drive(app, concurrency=4)
    now = driver.clock.now_ms
    [first] = driver.fire(execution_requested(params={"name": "first"}, due_ms=now))
    driver.step()
    driver.run_until(lambda: "first" in running, what="the first run")
    [alone] = driver.fire(suspect(now, {"name": "suspect"}), partition=0)
    driver.step()
    others = driver.fire(*(execution_requested(due_ms=now) for _ in range(3)))
    driver.step()
    assert not driver.kinds(alone), "the suspect waits for the run in hand"
    assert not any(driver.kinds(e) for e in others), "nothing starts while a suspect waits"
    gate.set()
    driver.run_until(lambda: "suspect" in running, what="the suspect's run")
    driver.step()
    assert not any(driver.kinds(e) for e in others), "nothing starts beside the suspect"
    gates["suspect"].set()
    driver.run_until(lambda: all(driver.events(e, "SUCCEEDED") for e in others),
                     what="the others' runs")  # fmt: skip
    assert driver.kinds(first)[-1] == "SUCCEEDED" and driver.kinds(alone)[-1] == "SUCCEEDED"
    assert beside[1] == set(), "the suspect ran alone"


def test_a_drain_commits_the_runs_that_end_and_gives_up_the_others(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()

    @app.handler("data.process")
    def work(ctx: JobContext) -> str:
        if ctx.params.get("stuck"):
            gate.wait(60)
        return "done"

    driver = drive(app, commit_interval_s=120.0)
    now = driver.clock.now_ms
    [stuck] = driver.fire(execution_requested(params={"stuck": True}, due_ms=now))
    [quick] = driver.fire(execution_requested(due_ms=now))
    driver.step()
    driver.run_until(lambda: driver.loop.stats.running == 1, what="the quick run's end")
    assert not driver.events(quick, "SUCCEEDED"), "its outcome waits for the interval"
    driver.shut_down(wait=False)
    assert driver.kinds(quick) == ["STARTED", "SUCCEEDED"], "committed by the drain"
    [given_up] = driver.events(stuck, "FAILED")
    assert given_up["error"]["error_type"] == WORKER_STOPPED
    assert given_up["error"]["retryable"] is True
    states = [record["state"] for record in driver.workers()]
    assert states[-2:] == ["DRAINING", "STOPPED"]


def test_a_revoked_partitions_records_are_left_to_its_next_owner(
    one_slot: OneSlot, gate: threading.Event
) -> None:
    driver, began = one_slot
    now = driver.clock.now_ms
    running, buffered = driver.fire(execution_requested(due_ms=now),
                                    execution_requested(due_ms=now), partition=0)  # fmt: skip
    driver.step()
    driver.run_until(lambda: running in began, what="the first run")
    assert driver.loop.stats.buffered["normal"] == 1
    driver.rebalance({})
    assert driver.committed() == 1, "the claim committed, the record waiting not"
    gate.set()
    driver.run_until(lambda: driver.events(running, "SUCCEEDED"), what="the run's end")
    driver.step()
    assert not driver.kinds(buffered), "never started once its partition went"
    driver.rebalance()
    driver.run_until(lambda: driver.events(buffered, "SUCCEEDED"), what="the record, back")
    assert driver.kinds(buffered) == ["STARTED", "SUCCEEDED"]
    assert driver.committed() == 2


def test_a_run_heartbeats_and_carries_its_progress(drive: DriveWorker) -> None:
    app = WorkerApp()
    step = threading.Event()

    @app.handler("data.process")
    def work(ctx: JobContext) -> str:
        ctx.progress(0.5, "half way")
        step.wait(60)
        ctx.progress(0.9, "nearly")
        return "done"

    driver = drive(app, heartbeat_s=10.0)
    [execution_id] = driver.fire(execution_requested(due_ms=driver.clock.now_ms))
    driver.step()
    driver.run_until(lambda: driver.events(execution_id, "HEARTBEAT"), what="the first report")
    [first] = driver.events(execution_id, "HEARTBEAT")
    assert (first["progress"]["fraction"], first["progress"]["message"]) == (0.5, "half way")
    driver.advance(10_000)
    beats = driver.events(execution_id, "HEARTBEAT")
    assert len(beats) == 2 and beats[1]["at_ms"] - beats[0]["at_ms"] == 10_000
    step.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    kinds = driver.kinds(execution_id)
    assert kinds[-2:] == ["HEARTBEAT", "SUCCEEDED"], "the last report goes before the outcome"
    assert driver.events(execution_id, "HEARTBEAT")[-1]["progress"]["fraction"] == 0.9


def test_a_claim_that_fails_leaves_neither_and_is_tried_again_after_the_backoff(
    drive: DriveWorker,
) -> None:
    recorder = Recorder()
    driver = recorder.drive(drive)
    driver.broker.fail_commits = 1
    [execution_id] = driver.fire(execution_requested(due_ms=driver.clock.now_ms))
    driver.step()
    lane = driver.loop.lanes[0]
    assert lane.tx.aborted == 1 and not driver.kinds(execution_id) and not driver.committed()
    assert execution_id not in recorder.began, "not run before its claim"
    driver.advance(99)
    assert not driver.kinds(execution_id), "the lane's backoff"
    driver.advance(1)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="the run")
    assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"] and driver.committed() == 1


def test_the_next_owner_passes_over_the_records_claimed_out_of_order(
    drive: DriveWorker, gate: threading.Event
) -> None:
    """The first record of a partition waits for its instant while the three behind it
    are claimed: the commit holds its offset, and the three above it in its metadata, so
    the partition's next owner runs the first and none of the three again."""
    recorder = Recorder(gate)
    first = recorder.drive(drive, worker_id="first", concurrency=4)
    later, *running = first.fire(execution_requested(due_ms=first.clock.now_ms + 20_000),
                                 *(execution_requested() for _ in range(3)),
                                 partition=0)  # fmt: skip
    first.step()
    assert all(first.kinds(e) == ["STARTED"] for e in running) and not first.kinds(later)
    # The first worker stops here, as if killed: it takes no more steps.
    successor = Recorder()
    second = successor.drive(drive, worker_id="second", broker=first.broker,
                             now_ms=first.clock.now_ms)  # fmt: skip
    second.advance(20_000)
    second.run_until(lambda: second.events(later, "SUCCEEDED"), what="the record left")
    assert second.loop.lanes[0].tracker.started_before == 3
    assert [len(second.events(e, "STARTED")) for e in running] == [1, 1, 1]
    assert second.events(later, "STARTED")[0]["worker_id"] == "second"
    assert set(successor.began) == {later}


def test_a_limited_type_lets_its_runs_end_before_its_partitions_are_revoked(
    drive: DriveWorker, gate: threading.Event
) -> None:
    """With a fleet-wide limit, the revocation waits for the runs of the partitions going
    (pipeline/concurrency.py): their outcomes are committed before the next owner gets
    them, which starts none of their records again."""
    settings = load_settings(exec_partitions=2, concurrency_limits={"data.process": 2})
    recorder = Recorder(gate)
    first = recorder.drive(drive, settings=settings, worker_id="first", concurrency=4)
    ids = [first.fire(execution_requested(), partition=p)[0] for p in range(2)]
    first.step()
    first.run_until(lambda: len(recorder.began) == 2, what="a run on each partition")
    revoking = threading.Thread(target=first.rebalance, args=({},))
    revoking.start()
    wait_for(lambda: first.consumers[0].revoking, timeout_s=10, what="the revocation")
    assert not any(first.events(e, "SUCCEEDED") for e in ids), "the runs still going"
    gate.set()
    revoking.join(30)
    assert not revoking.is_alive(), "the revocation ended with the runs"
    assert all(first.kinds(e) == ["STARTED", "SUCCEEDED"] for e in ids), "committed first"
    second = Recorder().drive(drive, settings=settings, worker_id="second",
                              broker=first.broker)  # fmt: skip
    second.step()
    assert not second.loop.stats.started, "the next owner starts none of them again"
