"""The runner survives a fatal Kafka error with no human: fenced, it rebuilds and goes on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.runtime.runner import Runner
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import Executions, in_thread, produce
from tests.support.waiting import wait_for

JOBS = 40


@contextmanager
def running_timers(topics: Topics, tmp_path: Path) -> Iterator[tuple[Runner, Executions]]:
    options = TIMER_OPTIONS.evolve(instance_id="r", state_dir=tmp_path / "state")
    runner = timer_runner(topics.settings, options)
    with in_thread(runner) as thread, closing(Executions(topics.settings)) as executions:
        yield runner, executions
        assert thread.is_alive()


def fire_jobs(topics: Topics, executions: Executions, expected: int, what: str) -> None:
    start = now_ms()
    produce(topics.settings, topics.intake,
            [submitted(run_at_ms=start + 500, now_ms=start) for _ in range(JOBS)])  # fmt: skip
    wait_for(lambda: executions.poll() >= expected, timeout_s=120, what=what)


def survives(topics: Topics, tmp_path: Path, fault: Callable[[Runner], object]) -> Runner:
    """Jobs fire before ``fault`` and after it, each once."""
    with running_timers(topics, tmp_path) as (runner, executions):
        fire_jobs(topics, executions, JOBS, "the first jobs fired")
        fault(runner)
        fire_jobs(topics, executions, 2 * JOBS, "the later jobs fired after the fault")
        executions.poll()
        assert len(executions.runs) == 2 * JOBS
        assert executions.duplicates() == {}
        return runner


def test_a_fenced_timer_processor_rebuilds_its_clients_and_fires_every_job_once(
    topics: Topics, tmp_path: Path
) -> None:
    def fence_the_producer(runner: Runner) -> None:
        """Another producer takes the runner's transactional id: the runner's producer is
        fenced, a fatal error no abort mends, at its next transaction."""
        intruder = clients.producer(
            topics.settings, transactional_id=f"{topics.settings.topic_prefix}jobstream.timers.r"
        )
        intruder.init_transactions(30)

    runner = survives(topics, tmp_path, fence_the_producer)
    assert runner.recoveries >= 1, "the runner met a fatal error and recovered"


def test_a_static_member_replaced_by_another_with_its_id_takes_its_partitions_back(
    topics: Topics, tmp_path: Path
) -> None:
    def fence_the_consumer(runner: Runner) -> None:
        """A consumer joins with the runner's group.instance.id (as a process restarted
        while the old one still ran would) and goes: the runner loses its partitions."""
        owned_before = set(runner.task.owned)
        assert owned_before, "the runner held partitions"
        prefix = topics.settings.topic_prefix
        member = {"group.instance.id": f"{prefix}jobstream.timers.r"}
        intruder = clients.consumer(topics.settings, f"{prefix}jobstream.timers", **member)
        joined = threading.Event()
        intruder.subscribe([topics.intake, topics.retry], on_assign=lambda c, p: joined.set())
        wait_for(lambda: intruder.poll(0.2) is not None or joined.is_set(), timeout_s=60,
                 what="the intruder joined the group")  # fmt: skip
        intruder.close()
        wait_for(lambda: runner.task.owned == owned_before, timeout_s=60,
                 what="the runner holding its partitions again")  # fmt: skip

    survives(topics, tmp_path, fence_the_consumer)
