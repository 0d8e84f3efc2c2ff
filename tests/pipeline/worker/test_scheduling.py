"""How a worker chooses what runs: bounded concurrency, priority tiers, overlap,
redelivery; on the driver (no broker)."""

from __future__ import annotations

import threading

from jobstream._pipeline.worker import JobContext, WorkerApp
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker


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
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    gauge = Gauge()

    @app.handler("data.process")
    def work(ctx: JobContext) -> None:
        with gauge:
            gate.wait(120)

    driver = drive(app, concurrency=3, prefetch=3)
    driver.fire(*(execution_requested() for _ in range(12)))
    lane = driver.loop.lanes[0]
    driver.run_until(lambda: gauge.now == 3 and lane.buffered()["normal"] >= 3,
                     what="three running, the buffer full")  # fmt: skip
    driver.step()
    normal = {tp for tp in lane.tracker.assigned() if "normal" in tp[0]}
    assert normal <= lane.paused and normal <= driver.consumers[0].paused, "the tier paused"
    assert gauge.now == 3 and driver.loop.stats.started == 3
    gate.set()
    driver.run_until(lambda: gauge.done == 12 and driver.committed() == 12,
                     what="all twelve jobs, every offset committed")  # fmt: skip
    assert gauge.peak == 3


def test_high_goes_first_and_low_is_not_starved(
    drive: DriveWorker, gate: threading.Event
) -> None:
    app = WorkerApp()
    order: list[str] = []

    @app.handler("data.process")
    def record(ctx: JobContext) -> None:
        if ctx.params.get("block"):
            gate.wait(120)
        else:
            order.append(ctx.params["tier"])

    driver = drive(app, concurrency=1, prefetch=10)
    driver.fire(execution_requested(params={"block": True}))
    driver.run_until(lambda: driver.loop.stats.started == 1, what="the blocker")
    partitions = driver.settings.exec_partitions
    for tier in ("LOW", "NORMAL", "HIGH"):  # oldest first: arrival order favours low
        for i in range(20):  # spread evenly: each partition holds more than its share
            driver.fire(execution_requested(priority=tier, params={"tier": tier}),
                        partition=i % partitions)  # fmt: skip
    driver.run_until(lambda: all(driver.loop.stats.buffered.get(t, 0) >= 10
                                 for t in ("high", "normal", "low")),
                     what="a backlog buffered in every tier")  # fmt: skip
    gate.set()
    driver.run_until(lambda: len(order) == 60, what="all sixty jobs")
    # The blocker took the round's first (high) slot, passed down to normal: 5 high remain.
    assert order[:5] == ["HIGH"] * 5, order[:10]
    assert "LOW" in order[:10], f"low starved: {order[:10]}"
    last_high = max(i for i, tier in enumerate(order) if tier == "HIGH")
    assert order.index("LOW") < last_high, "low waited for the whole high backlog"


def test_overlap_skip_reports_a_skipped_run_while_the_previous_one_runs(
    drive: DriveWorker, gate: threading.Event, gated_app: WorkerApp
) -> None:
    first = execution_requested(overlap="SKIP", due_ms=1_700_000_000_000)
    job_id = first.data["job_id"]
    second = execution_requested(overlap="SKIP", job_id=job_id, due_ms=1_700_000_060_000)
    allowed = execution_requested(overlap="ALLOW", job_id=job_id, due_ms=1_700_000_120_000)
    driver = drive(gated_app)
    (first_id,) = driver.fire(first)
    driver.step()
    assert driver.kinds(first_id) == ["STARTED"]
    second_id, allowed_id = driver.fire(second, allowed)
    driver.step()
    [skipped] = driver.events(second_id, "SUCCEEDED")
    assert skipped["result"] is None
    assert skipped["detail"] == "skipped: previous run still running"
    assert driver.kinds(second_id) == ["SUCCEEDED"]
    assert driver.kinds(allowed_id) == ["STARTED"]
    gate.set()
    driver.run_until(lambda: driver.events(first_id, "SUCCEEDED")
                     and driver.events(allowed_id, "SUCCEEDED"), what="both runs")  # fmt: skip


def test_a_redelivered_execution_runs_once(drive: DriveWorker, gate: threading.Event) -> None:
    app = WorkerApp()
    runs: list[str] = []

    @app.handler("data.process")
    def once(ctx: JobContext) -> None:
        runs.append(ctx.execution_id)
        gate.wait(120)

    execution = execution_requested()
    execution_id = execution.data["execution_id"]
    driver = drive(app)
    driver.fire(execution)
    driver.step()
    driver.fire(execution)  # the same execution again while it runs
    driver.step()
    assert driver.loop.stats.redelivered == 1, "it joins the run"
    gate.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="the run's end")
    driver.fire(execution)  # and once more after it finished
    driver.step()
    assert driver.loop.stats.redelivered == 2, "it is skipped"
    assert driver.committed() == 3, "all three records committed"
    assert runs == [execution_id]
    assert driver.kinds(execution_id) == ["STARTED", "SUCCEEDED"]
