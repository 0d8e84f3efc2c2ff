"""The runner survives a fatal Kafka error with no human: fenced, it rebuilds and goes on."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from pipeline.clock import now_ms
from pipeline.kafka import clients
from pipeline.timers.runner import TIMER_OPTIONS, timer_runner
from pipeline.topics import Topics
from tests.support.jobs import submitted
from tests.support.pipeline import Executions, in_thread, produce
from tests.support.waiting import wait_for

JOBS = 40


def test_a_fenced_timer_processor_rebuilds_its_clients_and_fires_every_job_once(
    topics: Topics, tmp_path: Path
) -> None:
    settings = topics.settings
    options = TIMER_OPTIONS.evolve(instance_id="r", state_dir=tmp_path / "state")
    runner = timer_runner(settings, options)
    with in_thread(runner) as thread, closing(Executions(settings)) as executions:
        start = now_ms()
        produce(settings, topics.intake,
                [submitted(run_at_ms=start + 500, now_ms=start) for _ in range(JOBS)])  # fmt: skip
        wait_for(lambda: executions.poll() >= JOBS, timeout_s=90, what="the first jobs fired")

        # Another producer takes the runner's transactional id: the runner's producer is
        # fenced, a fatal error no abort mends, at its next transaction.
        intruder = clients.producer(
            settings, transactional_id=f"{settings.topic_prefix}jobstream.timers.r"
        )
        intruder.init_transactions(30)
        later = now_ms()
        produce(settings, topics.intake,
                [submitted(run_at_ms=later + 500, now_ms=later) for _ in range(JOBS)])  # fmt: skip
        wait_for(lambda: executions.poll() >= 2 * JOBS, timeout_s=120,
                 what="the later jobs fired after the fence")  # fmt: skip

        assert runner.recoveries >= 1, "the runner was fenced and recovered"
        assert thread.is_alive()
        executions.poll()
        assert len(executions.runs) == 2 * JOBS
        assert executions.duplicates() == {}
