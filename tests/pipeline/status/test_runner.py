"""The status processor against the real broker: folding, leases, crash and restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer
from confluent_kafka import TopicPartition
from typer.testing import CliRunner

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.model.records import JobLifecycle, evolve, plain
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.serde import JobState, JobStatus
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner
from jobstream._pipeline.status.query import read_statuses, status
from jobstream._pipeline.topics import Topics
from tests.pipeline.status import events as ev
from tests.support.pipeline import DESERIALIZE, in_thread, process_env, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

S = JobState


class EventLog:
    """jobs.events as read_committed consumers see it, from the beginning."""

    def __init__(self, settings: Settings) -> None:
        self.consumer = clients.consumer(settings, "unused")
        self.consumer.assign([TopicPartition(Topics(settings).events, p, 0)
                              for p in range(settings.events_partitions)])  # fmt: skip
        self.events: list[JobLifecycle] = []

    def of(self, job_id: str, kind: str) -> list[JobLifecycle]:
        for message in self.consumer.consume(10_000, timeout=0.2):
            if message.error() is None:
                self.events.append(DESERIALIZE(message.value()).data)
        return [e for e in self.events if e["job_id"] == job_id and e["kind"] == kind]

    def close(self) -> None:
        self.consumer.close()


@pytest.fixture
def event_log(topics: Topics) -> Iterator[EventLog]:
    log = EventLog(topics.settings)
    yield log
    log.close()


@pytest.fixture
def status_in_thread(topics: Topics, tmp_path: Path) -> Iterator[Callable[..., None]]:
    with ExitStack() as running:

        def start(instance: str = "a", lease_ms: int = 30_000, **options_: Any) -> None:
            options = STATUS_OPTIONS.evolve(instance_id=instance, state_dir=tmp_path / "state",
                                            **options_)  # fmt: skip
            runner = status_runner(topics.settings, options, StatusPolicy(lease_ms=lease_ms))
            running.enter_context(in_thread(runner))

        yield start


def produce_events(settings: Settings, *events: JobLifecycle) -> None:
    produce(settings, Topics(settings).events, [ev.as_event(e) for e in events])


def states_reach(settings: Settings, expected: dict[str, JobState]) -> dict[str, JobStatus]:
    """Wait until every job of ``expected`` shows its state on jobs.status."""

    def check() -> dict[str, JobStatus] | None:
        found = read_statuses(settings, timeout_s=60)
        if all(job in found and found[job].state is s for job, s in expected.items()):
            return found
        return None

    return wait_for(check, timeout_s=120, interval_s=0.2, what=f"states {expected}")


def test_events_fold_into_jobs_status(
    topics: Topics, status_in_thread: Callable[..., None], event_log: EventLog
) -> None:
    settings, t = topics.settings, now_ms()
    done, cancelled, retried = new_job_id(), new_job_id(), new_job_id()
    run = ev.execution(done, epoch=t)
    first, second = ev.execution(retried, epoch=t), ev.execution(retried, epoch=t + 5, attempt=2)
    produce_events(
        settings,
        ev.scheduled(done, at_ms=t), ev.fired(run), ev.outcome("STARTED", run),
        ev.outcome("HEARTBEAT", run), ev.outcome("SUCCEEDED", run, result='{"ok": true}'),
        ev.lifecycle("SCHEDULED", cancelled, owner="other", at_ms=t, scheduled_at_ms=t + 60_000),
        ev.lifecycle("CANCELLED", cancelled, owner="other", at_ms=t + 1),
        ev.outcome("STARTED", ev.execution(cancelled, epoch=t + 2)),  # illegal: rejected
        ev.scheduled(retried, at_ms=t), ev.fired(first), ev.outcome("STARTED", first),
        ev.outcome("FAILED", first), ev.retry_scheduled(first, retry_at_ms=t + 5), ev.fired(second),
        ev.outcome("STARTED", second, worker="w2"), ev.outcome("SUCCEEDED", second, result="2"),
        ev.outcome("SUCCEEDED", first, result="zombie"),  # stale epoch: a duplicate
    )  # fmt: skip
    status_in_thread("a")

    found = states_reach(settings, {done: S.SUCCEEDED, cancelled: S.CANCELLED,
                                    retried: S.SUCCEEDED})  # fmt: skip
    assert (found[done].result, found[done].epoch, found[done].attempt) == ('{"ok": true}', t, 1)
    assert (found[retried].result, found[retried].attempt) == ("2", 2)
    assert found[retried].last_error is None
    assert found[cancelled].owner == "other"
    [duplicate] = wait_for(lambda: event_log.of(retried, "DUPLICATE"), timeout_s=60,
                           what="the DUPLICATE of the zombie outcome")  # fmt: skip
    assert duplicate["execution_id"] == first["execution_id"]

    assert set(read_statuses(settings, owner="other")) == {cancelled}
    assert set(read_statuses(settings, state=S.SUCCEEDED)) == {done, retried}
    assert set(read_statuses(settings, job_id=done)) == {done}

    app = typer.Typer()
    app.command()(status)
    shown = CliRunner().invoke(app, ["--owner", "tests"], env=process_env(settings))
    assert shown.exit_code == 0, shown.output
    assert done in shown.output and retried in shown.output and cancelled not in shown.output
    by_state = CliRunner().invoke(app, ["--state", "cancelled"], env=process_env(settings))
    assert by_state.exit_code == 0, by_state.output
    assert cancelled in by_state.output and done not in by_state.output
    one = CliRunner().invoke(app, [done], env=process_env(settings))
    assert one.exit_code == 0, one.output
    assert orjson.loads(one.output) == found[done].model_dump(mode="json")
    missing = CliRunner().invoke(app, [new_job_id()], env=process_env(settings))
    assert missing.exit_code == 1


def test_a_workflow_jobs_end_is_announced_without_waiting_for_the_commit_interval(
    topics: Topics, status_in_thread: Callable[..., None]
) -> None:
    settings, t = topics.settings, now_ms()
    job = new_job_id()
    run = {**ev.execution(job, epoch=t), "workflow_id": "wf-1"}
    in_workflow = [evolve(event, workflow_id="wf-1") for event in (
        ev.scheduled(job, at_ms=t), ev.fired(run), ev.outcome("STARTED", run),
        ev.outcome("SUCCEEDED", run, result='"done"'))]  # fmt: skip
    # An interval far longer than the wait below: only an urgent commit can meet it.
    status_in_thread("a", commit_interval_ms=120_000)
    intake = TopicReader(settings, topics.intake, settings.timer_partitions)
    try:
        produce_events(settings, *in_workflow)
        [ended] = wait_for(lambda: intake.of_job(job, name="StepEnded"), timeout_s=30,
                           interval_s=0.1, what="the StepEnded of the workflow's job")  # fmt: skip
    finally:
        intake.close()
    assert (ended["workflow_id"], ended["outcome"], ended["result"]) == ("wf-1", "SUCCEEDED",
                                                                          '"done"')  # fmt: skip
    assert read_statuses(settings, job_id=job)[job].state is S.SUCCEEDED, (
        "the status that ends the job commits with its StepEnded"
    )


def test_a_run_without_heartbeats_is_declared_lost_and_its_late_outcome_is_a_duplicate(
    topics: Topics, status_in_thread: Callable[..., None], event_log: EventLog
) -> None:
    settings, t = topics.settings, now_ms()
    lost_job, alive_job = new_job_id(), new_job_id()
    first, alive = ev.execution(lost_job, epoch=t), ev.execution(alive_job, epoch=t)
    # The live worker beats every 0.3 s: a 3 s lease leaves room for a loaded machine.
    status_in_thread("a", lease_ms=3000)
    started = now_ms()  # the lease cannot start before the STARTED event is sent
    produce_events(settings, ev.scheduled(lost_job, at_ms=t), ev.fired(first),
                   ev.outcome("STARTED", first, worker="a"), ev.scheduled(alive_job, at_ms=t),
                   ev.fired(alive), ev.outcome("STARTED", alive, worker="b"))  # fmt: skip
    finished = threading.Event()

    def live_worker() -> None:  # heartbeats every 0.3 s (a worker: 10 s), then succeeds
        while not finished.wait(0.3):
            produce_events(settings, ev.outcome("HEARTBEAT", alive, worker="b", at_ms=now_ms()))
        produce_events(settings, ev.outcome("SUCCEEDED", alive, worker="b", result='"alive"'))

    beating = threading.Thread(target=live_worker, daemon=True)
    beating.start()
    try:
        [lost] = wait_for(lambda: event_log.of(lost_job, "LOST"), timeout_s=60, what="LOST")
        assert lost["at_ms"] >= started + 3000, "declared lost before the lease ran out"
        assert lost.execution is not None and plain(lost.execution) == first
        assert (lost["epoch"], lost["worker_id"]) == (t, "a")
        states_reach(settings, {lost_job: S.FAILED_RETRYING, alive_job: S.RUNNING})

        # The first worker was only slow: its outcome shows up late, and is not applied.
        produce_events(settings, ev.outcome("SUCCEEDED", first, worker="a", result='"late"'))
        [duplicate] = wait_for(lambda: event_log.of(lost_job, "DUPLICATE"), timeout_s=60,
                               what="the DUPLICATE of the lost run's outcome")  # fmt: skip
        assert duplicate["execution_id"] == first["execution_id"]
        # The retry router retries the lost run; another worker runs it to the end.
        second = ev.execution(lost_job, epoch=now_ms(), attempt=2)
        produce_events(settings, ev.retry_scheduled(first, retry_at_ms=second["epoch"]),
                       ev.fired(second), ev.outcome("STARTED", second, worker="c"),
                       ev.outcome("SUCCEEDED", second, worker="c", result='"retried"'))  # fmt: skip
        found = states_reach(settings, {lost_job: S.SUCCEEDED})
        assert found[alive_job].state is S.RUNNING
    finally:
        finished.set()
        beating.join(30)
    found = states_reach(settings, {alive_job: S.SUCCEEDED})
    assert (found[lost_job].result, found[lost_job].attempt) == ('"retried"', 2)
    assert found[alive_job].result == '"alive"'
    assert len(event_log.of(lost_job, "LOST")) == 1
    assert len(event_log.of(lost_job, "DUPLICATE")) == 1
    assert event_log.of(alive_job, "LOST") == [], "a run that heartbeats is never lost"


def start_processor(settings: Settings, state_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "jobstream._pipeline", "status-processor", "--instance-id", "a",
             "--state-dir", str(state_dir), "--lease", "300s"],
            env=process_env(settings), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


def kill_9(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)


def test_kill_9_and_restart_keeps_state(
    topics: Topics, tmp_path: Path, event_log: EventLog
) -> None:
    settings, t, count = topics.settings, now_ms(), 30
    jobs = [new_job_id() for _ in range(count)]
    runs = {job: ev.execution(job, epoch=t + i) for i, job in enumerate(jobs)}
    produce_events(settings, *(e for job in jobs for e in (
        ev.scheduled(job, at_ms=t), ev.fired(runs[job]),
        ev.outcome("STARTED", runs[job]))))  # fmt: skip
    log = tmp_path / "status.log"
    processes = [start_processor(settings, tmp_path / "state", log)]
    try:
        states_reach(settings, dict.fromkeys(jobs, S.RUNNING))
        kill_9(processes[-1])
        # While it is down the runs end; only the state it kept knows they were RUNNING
        # (SUCCEEDED of a job never seen is illegal) and in which epoch (the zombie).
        produce_events(settings, *(ev.outcome("SUCCEEDED", runs[job]) for job in jobs),
                       ev.outcome("FAILED", {**runs[jobs[0]], "epoch": t - 1}))  # fmt: skip
        processes.append(start_processor(settings, tmp_path / "state", log))
        states_reach(settings, dict.fromkeys(jobs, S.SUCCEEDED))
        wait_for(lambda: event_log.of(jobs[0], "DUPLICATE"), timeout_s=60, what="DUPLICATE")

        # Once more, from empty local files: the changelog alone rebuilds the state.
        kill_9(processes[-1])
        produce_events(settings, *(ev.outcome("SUCCEEDED", runs[job]) for job in jobs[1:4]))
        processes.append(start_processor(settings, tmp_path / "fresh", log))
        for job in jobs[1:4]:
            wait_for(lambda job=job: event_log.of(job, "DUPLICATE"), timeout_s=120,
                     what=f"the second outcome of {job} as a DUPLICATE")  # fmt: skip
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(30)
    found = read_statuses(settings, timeout_s=60)
    assert {found[job].state for job in jobs} == {S.SUCCEEDED}
    assert [len(event_log.of(job, "DUPLICATE")) for job in jobs[:5]] == [1, 1, 1, 1, 0]
    assert all(event_log.of(job, "LOST") == [] for job in jobs)


def stored(runner: Runner, job_id: str) -> bool:
    """Whether the runner's local stores hold a record of ``job_id``."""
    key = b"j" + job_id.encode()
    return any(store.get(key) is not None for store in runner.partitions.stores.values())


def stepping(*runners: Runner, until: Callable[[], bool], what: str) -> None:
    """Run the loops of ``runners`` by hand until ``until()`` holds."""

    def step() -> bool:
        for runner in runners:
            runner.step()
        return until()

    wait_for(step, timeout_s=120, interval_s=0, what=what)


NEVER_MS = 3_600_000
"""A commit interval no test reaches: these tests say when to commit."""


def test_one_transaction_spans_several_consumes_and_the_stores_wait_for_its_commit(
    topics: Topics, tmp_path: Path
) -> None:
    settings, t = topics.settings, now_ms()
    first, later = [new_job_id() for _ in range(4)], [new_job_id() for _ in range(4)]
    options = STATUS_OPTIONS.evolve(state_dir=tmp_path / "state", poll_ms=20,
                                    commit_interval_ms=NEVER_MS)  # fmt: skip
    runner = status_runner(settings, options)
    try:
        runner.start()
        produce_events(settings, *(ev.scheduled(job, at_ms=t) for job in first))
        stepping(runner, until=lambda: runner.uncommitted == 4, what="the first events folded")
        produce_events(settings, *(ev.scheduled(job, at_ms=t) for job in later))
        stepping(runner, until=lambda: runner.uncommitted == 8, what="the later events folded")

        assert runner.stats.transactions == 0
        assert not any(stored(runner, job) for job in first + later), "stores wait for the commit"
        assert read_statuses(settings, timeout_s=60) == {}, "nothing is visible before the commit"

        runner.commit()
        assert (runner.stats.transactions, runner.stats.consumed, runner.uncommitted) == (1, 8, 0)
        assert all(stored(runner, job) for job in first + later)
        assert set(read_statuses(settings, state=S.SCHEDULED, timeout_s=60)) == {*first, *later}
    finally:
        runner.close()


def test_a_transaction_commits_when_it_holds_max_events(topics: Topics, tmp_path: Path) -> None:
    settings, t = topics.settings, now_ms()
    jobs = [new_job_id() for _ in range(6)]
    # One event per consume(); each SCHEDULED folds one event and emits nothing (its status
    # is the store's change, jobs.status its changelog: size 1), so every third event fills a
    # transaction of at most 3.
    options = STATUS_OPTIONS.evolve(state_dir=tmp_path / "state", poll_ms=20, batch_size=1,
                                    commit_interval_ms=NEVER_MS, commit_max_records=3)  # fmt: skip
    runner = status_runner(settings, options)
    try:
        runner.start()
        produce_events(settings, *(ev.scheduled(job, at_ms=t) for job in jobs))
        stepping(runner, until=lambda: runner.stats.consumed == 6, what="every event committed")
        assert (runner.stats.transactions, runner.uncommitted) == (2, 0)
    finally:
        runner.close()


def test_a_partition_revoked_with_an_open_transaction_is_redone_by_its_next_owner(
    topics: Topics, tmp_path: Path
) -> None:
    settings, t = topics.settings, now_ms()
    jobs = [new_job_id() for _ in range(30)]  # on every one of the 3 partitions
    runs = {job: ev.execution(job, epoch=t) for job in jobs}
    produce_events(settings, *(e for job in jobs for e in (ev.scheduled(job, at_ms=t),
                                                          ev.fired(runs[job]))))  # fmt: skip
    options = STATUS_OPTIONS.evolve(poll_ms=20, commit_interval_ms=NEVER_MS)
    a = status_runner(settings, options.evolve(instance_id="a", state_dir=tmp_path / "a"))
    b = status_runner(settings, options.evolve(instance_id="b", state_dir=tmp_path / "b"))
    try:
        a.start()
        stepping(a, until=lambda: a.uncommitted == 60, what="a folding every event")
        b.start()  # joins the group: a's partitions are revoked while its transaction is open
        stepping(a, b, until=lambda: a.stats.dropped > 0, what="a dropping the revoked work")
        assert a.stats.transactions == 0

        def all_queued() -> bool:
            for runner in (a, b):
                runner.commit()
            found = read_statuses(settings, timeout_s=60)
            return all(job in found and found[job].state is S.QUEUED for job in jobs)

        stepping(a, b, until=all_queued, what="every job QUEUED")
        assert a.stats.consumed + b.stats.consumed == 60, "every event folded once, after all"
        assert {job for job in jobs if stored(a, job) or stored(b, job)} == set(jobs)
    finally:
        a.close()
        b.close()
