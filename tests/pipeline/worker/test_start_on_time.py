"""Records fired ahead of their due instant (JOBSTREAM_FIRE_LEAD), against the real
broker: a worker holds each until its instant, never starting it before; a cancel that
arrives meanwhile ends it CANCELLED, never started."""

from __future__ import annotations

import threading
import time
from itertools import pairwise

from pipeline.clock import now_ms
from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker, Worker
from tests.pipeline.worker.test_cancel_runs import assert_cancelled, cancel
from tests.support.waiting import wait_for


def test_records_fired_ahead_start_on_their_instant_not_before(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    app = WorkerApp()
    started: dict[str, tuple[int, int]] = {}
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            started[ctx.execution_id] = (now_ms(), ctx.scheduled_at_ms)

    worker = start_worker(app)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    base = now_ms() + 6000
    jobs = [execution_requested(fire_ms=base + i * 400) for i in range(4)]
    ids = submit(topics, *jobs)
    wait_for(lambda: len(worker.runtime.lanes[0].early) == 4, timeout_s=5,
             what="the four records held before their instant")  # fmt: skip
    for execution_id in ids:
        [started_event] = events.wait(execution_id, "STARTED", timeout_s=30)
        events.wait(execution_id, "SUCCEEDED", timeout_s=30)
        at, due = started[execution_id]
        assert at >= due, f"started {due - at} ms before its instant"
        assert started_event["at_ms"] >= due
    order = sorted(ids, key=lambda execution_id: started[execution_id][0])
    assert order == ids, "they start in the order of their instants"


def _flagging_worker(start_worker: StartWorker, **options: float) -> tuple[Worker, threading.Event]:
    """A worker whose handler only sets the event it returns, its partitions assigned."""
    app = WorkerApp()
    ran = threading.Event()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        ran.set()

    worker = start_worker(app, **options)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    return worker, ran


def test_a_cancel_before_the_instant_ends_the_record_never_started(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    worker, ran = _flagging_worker(start_worker)
    job = execution_requested(fire_ms=now_ms() + 8000)
    (execution_id,) = submit(topics, job)
    wait_for(lambda: len(worker.runtime.lanes[0].early) == 1, timeout_s=6,
             what="the record held before its instant")  # fmt: skip
    cancel(topics, job)
    [ended] = events.wait(execution_id, "CANCELLED", timeout_s=30)
    assert_cancelled(ended)
    events.catch_up()
    assert events.kinds(execution_id) == ["CANCELLED"] and not ran.is_set()


def test_runs_claimed_ahead_hold_no_slot_until_their_instant(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    """Forty records due at one instant, a worker of four slots: every one is claimed
    (its STARTED committed) before the instant, not four at a time after it, and still no
    more than four handlers run at once, none before the instant."""
    app = WorkerApp()
    started: dict[str, int] = {}
    running, most = [0], [0]
    lock = threading.Lock()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with lock:
            started[ctx.execution_id] = now_ms()
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    worker = start_worker(app, concurrency=4, claim_ahead_s=2.0)
    wait_for(lambda: worker.runtime.lanes[0].tracker.assigned(), timeout_s=60,
             what="the worker's partitions")  # fmt: skip
    due = now_ms() + 6000
    ids = submit(topics, *(execution_requested(fire_ms=due) for _ in range(40)))

    def all_started() -> bool:
        events.poll()
        return {r["execution_id"] for r in events.records if r["kind"] == "STARTED"} >= set(ids)

    wait_for(all_started, timeout_s=max(0.1, (due - now_ms()) / 1000 - 0.2),
             what="every STARTED before the instant")  # fmt: skip
    assert now_ms() < due and not started, "claimed ahead, none launched yet"
    assert len(worker.runtime.inflight.ahead) == 40
    for execution_id in ids:
        events.wait(execution_id, "SUCCEEDED", timeout_s=30)
    assert min(started.values()) >= due and most[0] <= 4
    assert not worker.runtime.inflight.ahead and not worker.runtime.inflight.slots


def test_a_cancel_after_the_claim_ends_a_run_claimed_ahead_never_launched(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    worker, ran = _flagging_worker(start_worker, claim_ahead_s=4.0)
    job = execution_requested(fire_ms=now_ms() + 6000)
    (execution_id,) = submit(topics, job)
    events.wait(execution_id, "STARTED", timeout_s=5)
    cancel(topics, job)
    [ended] = events.wait(execution_id, "CANCELLED", timeout_s=30)
    assert_cancelled(ended)
    assert now_ms() < job.data.scheduled_at_ms, "cancelled between its claim and its instant"
    time.sleep(max(0.0, (job.data.scheduled_at_ms - now_ms()) / 1000 + 0.5))
    events.catch_up()
    assert events.kinds(execution_id) == ["STARTED", "CANCELLED"] and not ran.is_set()
    assert not worker.runtime.inflight.ahead and not worker.runtime.inflight.slots


def test_runs_claimed_ahead_keep_their_lease_with_heartbeats_until_their_instant(
    topics: Topics, start_worker: StartWorker, events: EventLog
) -> None:
    """A run claimed seconds ahead holds a lease from its STARTED on: the worker beats for
    it every ``heartbeat_s`` before its launch as after, so the lease cannot end while it
    waits for its instant."""
    _, ran = _flagging_worker(start_worker, claim_ahead_s=5.0, heartbeat_s=0.5)
    due = now_ms() + 7000
    (execution_id,) = submit(topics, execution_requested(fire_ms=due))
    [claimed] = events.wait(execution_id, "STARTED", timeout_s=6)
    beats = events.wait(execution_id, "HEARTBEAT", count=3, timeout_s=6)
    assert now_ms() < due and not ran.is_set(), "beats before the instant, none launched"
    assert [b["at_ms"] for b in beats] == sorted(b["at_ms"] for b in beats)
    assert all(b["at_ms"] - a["at_ms"] >= 400 for a, b in pairwise(beats))
    events.wait(execution_id, "SUCCEEDED", timeout_s=30)
    assert ran.is_set() and claimed["at_ms"] >= due
