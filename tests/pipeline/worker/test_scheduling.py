"""How a worker chooses what runs: bounded concurrency, priority tiers, overlap, redelivery."""

from __future__ import annotations

import threading

from pipeline.topics import Topics
from pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested, submit
from tests.pipeline.worker.support import EventLog, StartWorker, committed_offsets
from tests.support.waiting import wait_for


class Gauge:
    """Counts handlers running at once, from inside them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = self.done = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1
            self.done += 1


def test_concurrency_is_bounded_and_partitions_pause_while_full(
    topics: Topics, start_worker: StartWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    gauge = Gauge()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with gauge:
            gate.wait(120)

    submit(topics, *(execution_requested() for _ in range(12)))
    worker = start_worker(app, concurrency=3, prefetch=3)
    lane = worker.runtime.lanes[0]
    wait_for(lambda: gauge.now == 3 and lane.buffered()["normal"] >= 3, timeout_s=60,
             what="three running, the buffer full")  # fmt: skip
    wait_for(lambda: {tp for tp in lane.tracker.assigned() if "normal" in tp[0]} <= lane.paused,
             timeout_s=30, what="the full tier's partitions paused")  # fmt: skip
    assert gauge.now == 3 and worker.runtime.stats.started == 3
    gate.set()
    wait_for(lambda: gauge.done == 12, timeout_s=60, what="all twelve jobs")
    assert gauge.peak == 3
    wait_for(lambda: committed_offsets(topics.settings, "data.process") == 12, timeout_s=30,
             what="every offset committed")  # fmt: skip


def test_high_goes_first_and_low_is_not_starved(
    topics: Topics, start_worker: StartWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    order: list[str] = []

    @app.handler("data.process")
    def record(ctx: JobContext) -> None:
        if ctx.params.get("block"):
            gate.wait(120)
        else:
            order.append(ctx.params["tier"])

    submit(topics, execution_requested(params={"block": True}))
    worker = start_worker(app, concurrency=1, prefetch=10)
    wait_for(lambda: worker.runtime.stats.started == 1, timeout_s=60, what="the blocker")
    for tier in ("LOW", "NORMAL", "HIGH"):  # oldest first: arrival order favours low
        submit(topics, *(execution_requested(priority=tier, params={"tier": tier})
                         for _ in range(20)))  # fmt: skip
    wait_for(lambda: all(worker.runtime.stats.buffered.get(t, 0) >= 10
                         for t in ("high", "normal", "low")),
             timeout_s=60, what="a backlog buffered in every tier")  # fmt: skip
    gate.set()
    wait_for(lambda: len(order) == 60, timeout_s=120, what="all sixty jobs")
    # The blocker took the round's first (high) slot, passed down to normal: 5 high remain.
    assert order[:5] == ["HIGH"] * 5, order[:10]
    assert "LOW" in order[:10], f"low starved: {order[:10]}"
    last_high = max(i for i, tier in enumerate(order) if tier == "HIGH")
    assert order.index("LOW") < last_high, "low waited for the whole high backlog"


def test_overlap_skip_reports_a_skipped_run_while_the_previous_one_runs(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event,
    gated_app: WorkerApp,
) -> None:  # fmt: skip
    first = execution_requested(overlap="SKIP", fire_ms=1_700_000_000_000)
    job_id = first.data["job_id"]
    second = execution_requested(overlap="SKIP", job_id=job_id, fire_ms=1_700_000_060_000)
    allowed = execution_requested(overlap="ALLOW", job_id=job_id, fire_ms=1_700_000_120_000)
    (first_id,) = submit(topics, first)
    start_worker(gated_app)
    events.wait(first_id, "STARTED")
    second_id, allowed_id = submit(topics, second, allowed)

    skipped = events.wait(second_id, "SUCCEEDED")[0]
    assert skipped["result"] is None
    assert skipped["detail"] == "skipped: previous run still running"
    assert events.kinds(second_id) == ["SUCCEEDED"]
    events.wait(allowed_id, "STARTED")
    gate.set()
    events.wait(first_id, "SUCCEEDED")
    events.wait(allowed_id, "SUCCEEDED")


def test_a_redelivered_execution_runs_once(
    topics: Topics, start_worker: StartWorker, events: EventLog, gate: threading.Event
) -> None:
    app = WorkerApp()
    runs: list[str] = []

    @app.handler("data.process")
    def once(ctx: JobContext) -> None:
        runs.append(ctx.execution_id)
        gate.wait(120)

    execution = execution_requested()
    execution_id = execution.data["execution_id"]
    worker = start_worker(app)
    submit(topics, execution)
    events.wait(execution_id, "STARTED")
    submit(topics, execution)  # the same execution again while it runs
    wait_for(lambda: worker.runtime.stats.redelivered == 1, timeout_s=30, what="the join")
    gate.set()
    events.wait(execution_id, "SUCCEEDED")
    submit(topics, execution)  # and once more after it finished
    wait_for(lambda: worker.runtime.stats.redelivered == 2, timeout_s=30, what="the skip")
    wait_for(lambda: committed_offsets(topics.settings, "data.process") == 3, timeout_s=30,
             what="all three records committed")  # fmt: skip
    events.catch_up()
    assert runs == [execution_id]
    assert events.kinds(execution_id) == ["STARTED", "SUCCEEDED"]
