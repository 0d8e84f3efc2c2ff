"""Children from a running handler (``ctx.spawn``), no broker: their ids, labels and rules;
the same ids on every attempt; and every place a handler runs (a thread, the event loop, a
child process) handing them to the worker, which produces them in the run's lane's next
transaction, at the latest with its outcome."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import validate_submitted
from jobstream._pipeline.model.labels import STEP_LABEL
from jobstream._pipeline.model.records import evolve
from jobstream._pipeline.serde import Event
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.app import load_app
from jobstream._pipeline.worker.context import build_context
from jobstream._pipeline.worker.driver import WorkerDriver
from jobstream._pipeline.worker.executor import Finished, JobExecutor
from jobstream._pipeline.worker.processes import ProcessExecutor
from jobstream._pipeline.worker.spawns import Spawned, SpawnLedger
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL, spawned_job_id
from tests.pipeline.worker import spawn_app
from tests.pipeline.worker.executions import execution_requested
from tests.pipeline.worker.support import DriveWorker

APP = "tests.pipeline.worker.spawn_app"
app = load_app(APP)
WORKFLOW = "wf-spawns"
STEP = "fan-out"


def in_workflow(event: Event, *, workflow_id: str = WORKFLOW, step: str | None = STEP) -> Event:
    """``event``'s execution as a job of ``workflow_id``, step ``step`` (None: a job of the
    workflow submitted without a step name)."""
    data = event.data
    labels = {} if step is None else {STEP_LABEL: step}
    return Event(event.name, evolve(data, workflow_id=workflow_id,
                                    spec=evolve(data.spec, labels=labels)))  # fmt: skip


def context(event: Event, sink: list[Spawned] | None = None) -> JobContext:
    return build_context(event.data, worker_id="w", started_ms=0, timeout_s=30,
                         spawn_sink=None if sink is None else sink.append)  # fmt: skip


# -- ids, labels and the rules -------------------------------------------------------------


def test_a_child_is_a_job_of_the_workflow_with_its_derived_id_and_labels() -> None:
    sent: list[Spawned] = []
    event = in_workflow(execution_requested(job_type="spawn.many"))
    ctx = context(event, sent)
    job_id = ctx.spawn("data.process", {"page": 3}, priority="high", timeout_ms=5000,
                       labels={"team": "data"}, pool="gpu")  # fmt: skip
    assert job_id == spawned_job_id("tests", WORKFLOW, STEP, "0")
    [child] = sent
    record = child.record
    assert (child.key, child.job_id, record.job_id) == ("0", job_id, job_id)
    assert record.workflow_id == WORKFLOW and record.spec.owner == "tests"
    assert record.spec.labels == {"team": "data", SPAWNED_BY_LABEL: ctx.job_id,
                                  STEP_LABEL: f"{STEP}/0"}  # fmt: skip
    assert record.spec.depends_on == [] and orjson.loads(record.spec.params) == {"page": 3}
    assert (record.spec.priority, record.spec.timeout_ms, record.spec.pool) == ("HIGH", 5000, "gpu")
    validate_submitted(record, now_ms=record.submitted_at_ms)  # as the timers will check it
    assert dict(ctx.spawned) == {"0": job_id}


def test_keys_default_to_the_ordinals_of_the_spawns_without_one() -> None:
    ctx = context(in_workflow(execution_requested()))
    ids = [ctx.spawn("data.process"), ctx.spawn("data.process", key="summary"),
           ctx.spawn("data.process"), ctx.spawn("data.process", key=42)]  # fmt: skip
    assert list(ctx.spawned) == ["0", "summary", "1", "42"]
    assert ids == [spawned_job_id("tests", WORKFLOW, STEP, key)
                   for key in ("0", "summary", "1", "42")]  # fmt: skip


def test_a_job_of_a_workflow_without_a_step_name_spawns_under_its_job_id() -> None:
    sent: list[Spawned] = []
    ctx = context(in_workflow(execution_requested(), step=None), sent)
    job_id = ctx.spawn("data.process", key="a")
    assert job_id == spawned_job_id("tests", WORKFLOW, ctx.job_id, "a")
    assert sent[0].record.spec.labels[STEP_LABEL] == f"{ctx.job_id}/a"


def test_a_retried_run_spawns_the_same_children() -> None:
    first = execution_requested(attempt=1)
    again = execution_requested(attempt=2, job_id=first.data.job_id)
    spawned = []
    for event in (first, again):
        ctx = context(in_workflow(event))
        spawned.append([ctx.spawn("data.process", {"n": n}) for n in range(3)]
                       + [ctx.spawn("data.process", key="last")])  # fmt: skip
    assert spawned[0] == spawned[1] and len(set(spawned[0])) == 4


def test_another_step_or_workflow_spawns_other_children() -> None:
    ids = {context(in_workflow(execution_requested(), workflow_id=w, step=s)).spawn("x.y")
           for w, s in [("wf-a", "one"), ("wf-a", "two"), ("wf-b", "one")]}  # fmt: skip
    assert len(ids) == 3


def test_a_key_spawned_twice_in_a_run_is_refused_naming_it() -> None:
    sent: list[Spawned] = []
    ctx = context(in_workflow(execution_requested()), sent)
    ctx.spawn("data.process", key="a")
    with pytest.raises(ValidationError, match="'a' was spawned already") as caught:
        ctx.spawn("data.process", key="a")
    assert caught.value.field == "key" and caught.value.retryable is False
    ctx.spawn("data.process", key="1")
    ctx.spawn("data.process")
    with pytest.raises(ValidationError, match="'1' was spawned already"):
        ctx.spawn("data.process")  # ordinal 1, given as a key before
    assert len(sent) == 3


@pytest.mark.parametrize(("key", "message"), [
    ("", "must not be blank"), ("  ", "must not be blank"), ("x" * 101, "more than 100"),
    ("a\nb", "control characters"), (1.5, "expected a string or an int"),
    (True, "expected a string or an int"),
])  # fmt: skip
def test_a_bad_key_is_refused_naming_it(key: object, message: str) -> None:
    ctx = context(in_workflow(execution_requested()))
    with pytest.raises(ValidationError, match=message) as caught:
        ctx.spawn("data.process", key=key)  # type: ignore[arg-type]
    assert caught.value.field == "key"
    assert ctx.spawn("data.process") == spawned_job_id("tests", WORKFLOW, STEP, "0")


@pytest.mark.parametrize(("fields", "field"), [
    ({"job_type": "Not A Type!"}, "spec.job_type"),
    ({"params": [1, 2]}, "spec.params"),
    ({"priority": "urgent"}, "spec.priority"),
    ({"timeout_ms": -1}, "spec.timeout_ms"),
    ({"retry": {"max_attempts": 0}}, "spec.retry.max_attempts"),
    ({"labels": {"a=b": "c"}}, "spec.labels"),
    ({"labels": {SPAWNED_BY_LABEL: "me"}}, "spec.labels"),
    ({"labels": {STEP_LABEL: "mine"}}, "spec.labels"),
    ({"run_at": "yesterday"}, "spec.run_at_ms"),
    ({"pool": "no pools here"}, "spec.pool"),
])  # fmt: skip
def test_a_bad_child_raises_in_the_handler_naming_its_field(fields: dict[str, Any],
                                                            field: str) -> None:  # fmt: skip
    sent: list[Spawned] = []
    ctx = context(in_workflow(execution_requested()), sent)
    fields = dict(fields)
    with pytest.raises(ValidationError) as caught:
        ctx.spawn(fields.pop("job_type", "data.process"), **fields)
    assert caught.value.field == field, caught.value
    assert sent == [] and dict(ctx.spawned) == {}
    ctx.spawn("data.process")  # the ordinal of the bad spawn is not taken again
    assert list(ctx.spawned) == ["1"]


def test_a_job_outside_a_workflow_cannot_spawn() -> None:
    ctx = context(execution_requested())
    with pytest.raises(ValidationError, match="belongs to no workflow") as caught:
        ctx.spawn("data.process")
    assert caught.value.field == "workflow_id"


def test_the_ledger_numbers_spawns_from_threads_without_losing_one() -> None:
    ledger, taken = SpawnLedger(), queue.SimpleQueue[str]()

    def spawn_many() -> None:
        for _ in range(500):
            taken.put(ledger.take(None))

    threads = [threading.Thread(target=spawn_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = [taken.get() for _ in range(2000)]
    assert sorted(keys, key=int) == [str(n) for n in range(2000)]


# -- through the worker (WorkerDriver) -------------------------------------------------------


def intake_keys(driver: WorkerDriver) -> list[bytes | None]:
    return [message.key() for message in driver.broker.records(driver.topics.intake)]


def test_a_run_s_children_go_to_jobs_intake_keyed_by_the_workflow(drive: DriveWorker) -> None:
    driver = drive(app)
    event = in_workflow(execution_requested(job_type="spawn.many", params={"count": 3}))
    [execution_id] = driver.fire(event)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    [end] = driver.events(execution_id, "SUCCEEDED")
    ids = orjson.loads(end.result)
    assert (
        [r.job_id for r in driver.submitted()]
        == ids
        == [spawned_job_id("tests", WORKFLOW, STEP, str(n)) for n in range(3)]
    )
    assert intake_keys(driver) == [WORKFLOW.encode()] * 3
    assert driver.loop.stats.spawned == 3


def test_children_leave_in_the_run_s_next_transaction_not_with_its_end(drive: DriveWorker) -> None:
    spawn_app.RELEASE.clear()
    driver = drive(app)
    [execution_id] = driver.fire(in_workflow(execution_requested(job_type="spawn.wait")))
    try:
        driver.run_until(lambda: len(driver.submitted()) == 2, what="the children")
        assert driver.kinds(execution_id) == ["STARTED"], "the run still going"
    finally:
        spawn_app.RELEASE.set()
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    assert len(driver.submitted()) == 2, "each produced once"


def test_an_async_handler_spawns_through_aspawn(drive: DriveWorker) -> None:
    driver = drive(app)
    event = in_workflow(execution_requested(job_type="spawn.async", params={"count": 4}))
    [execution_id] = driver.fire(event)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    assert len({r.job_id for r in driver.submitted()}) == 4


def test_the_children_of_a_failed_run_are_submitted_and_its_retry_spawns_the_same(
    drive: DriveWorker,
) -> None:
    driver = drive(app)
    first = in_workflow(execution_requested(job_type="spawn.fail"))
    [one] = driver.fire(first)
    driver.run_until(lambda: driver.events(one, "FAILED"), what="FAILED")
    again = in_workflow(execution_requested(job_type="spawn.fail", attempt=2,
                                            job_id=first.data.job_id))  # fmt: skip
    [two] = driver.fire(again)
    driver.run_until(lambda: driver.events(two, "FAILED"), what="the retry's FAILED")
    ids = [r.job_id for r in driver.submitted()]
    assert len(ids) == 4 and ids[:2] == ids[2:], "the timers drop the second two"


def test_a_bad_child_fails_nothing_but_the_call(drive: DriveWorker) -> None:
    driver = drive(app)
    event = in_workflow(execution_requested(job_type="spawn.bad", params={"priority": "soon"}))
    [execution_id] = driver.fire(event)
    driver.run_until(lambda: driver.events(execution_id, "SUCCEEDED"), what="SUCCEEDED")
    [end] = driver.events(execution_id, "SUCCEEDED")
    assert orjson.loads(end.result).startswith("refused: spec.priority:")
    assert driver.submitted() == []


@pytest.fixture
def late() -> Iterator[tuple[WorkerApp, threading.Event, queue.SimpleQueue[str]]]:
    """An app whose data.process spawns once ``gate`` opens (after its timeout), and says so."""
    gate, done = threading.Event(), queue.SimpleQueue[str]()
    late_app = WorkerApp()

    @late_app.handler("data.process", timeout_s=1)
    def spawn_late(ctx: JobContext) -> None:
        gate.wait(30)
        done.put(ctx.spawn("data.process"))

    yield late_app, gate, done
    gate.set()


def test_a_child_spawned_after_its_run_timed_out_is_not_submitted(
    drive: DriveWorker, late: tuple[WorkerApp, threading.Event, queue.SimpleQueue[str]]
) -> None:
    late_app, gate, done = late
    driver = drive(late_app)
    [execution_id] = driver.fire(in_workflow(execution_requested()))
    driver.run_until(lambda: driver.loop.inflight.slots, what="the run's launch")
    driver.advance(1500)
    driver.run_until(lambda: driver.events(execution_id, "TIMED_OUT"), what="TIMED_OUT")
    gate.set()
    done.get(timeout=30)
    driver.run_until(lambda: not driver.loop.inflight.slots, what="the thread's return")
    driver.step()
    assert driver.submitted() == []


# -- in a child process ----------------------------------------------------------------------


class Sink:
    """A run's spawn sink that notes how many children it had when the run ended."""

    def __init__(self) -> None:
        self.children: list[Spawned] = []
        self.at_end: dict[int, int] = {}
        self.ends: queue.SimpleQueue[Finished] = queue.SimpleQueue()

    def finished(self, end: Finished) -> None:
        self.at_end[end.token] = len(self.children)
        self.ends.put(end)

    def context(self, job_type: str, **params: Any) -> JobContext:
        event = in_workflow(execution_requested(job_type=job_type, params=params))
        return build_context(event.data, worker_id="w", started_ms=0, timeout_s=30,
                             spawn_sink=self.children.append)  # fmt: skip


@pytest.fixture
def children(child_processes: None) -> Iterator[tuple[ProcessExecutor, Sink]]:
    sink = Sink()
    executor = ProcessExecutor(APP, 1, sink.finished)
    yield executor, sink
    executor.close()


@pytest.mark.parametrize("job_type", ["spawn.many", "spawn.async"])
def test_a_handler_in_a_child_process_spawns_across_the_pipe(
    children: tuple[ProcessExecutor, Sink], job_type: str
) -> None:
    executor, sink = children
    ctx = sink.context(job_type, count=5)
    executor.submit(1, app.get(job_type), ctx)
    end = sink.ends.get(timeout=60)
    assert end.result is not None and end.result.inline is not None, end
    ids = orjson.loads(end.result.inline)
    assert [child.job_id for child in sink.children] == ids
    assert ids == [spawned_job_id("tests", WORKFLOW, STEP, str(n)) for n in range(5)]
    assert sink.at_end[1] == 5, "every child crossed before the run's end"


def test_the_children_of_a_child_process_that_dies_cross_before_its_death(
    children: tuple[ProcessExecutor, Sink],
) -> None:
    executor, sink = children
    executor.submit(1, app.get("spawn.crash"), sink.context("spawn.crash"))
    end = sink.ends.get(timeout=60)
    assert end.error is not None and end.error.error_type == "WorkerCrashed", end
    assert len(sink.children) == 3 and sink.at_end[1] == 3


def test_a_child_process_refuses_a_bad_child_in_the_handler(
    children: tuple[ProcessExecutor, Sink],
) -> None:
    executor, sink = children
    executor.submit(1, app.get("spawn.bad"), sink.context("spawn.bad", params=[1]))
    end = sink.ends.get(timeout=60)
    assert end.result is not None and end.result.inline is not None, end
    assert orjson.loads(end.result.inline).startswith("refused: spec.params:")
    assert sink.children == []


def test_the_executor_on_threads_hands_children_over_before_the_end() -> None:
    sink = Sink()
    executor = JobExecutor(1, sink.finished)
    try:
        executor.submit(1, app.get("spawn.many"), sink.context("spawn.many", count=2))
        assert sink.ends.get(timeout=30).result is not None
        assert sink.at_end[1] == 2
    finally:
        executor.close()
