"""The timer processor driven with no broker (pipeline/runtime/driver.py), on real RocksDB
files and a clock the test sets, and what its outputs are read with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jobstream._pipeline.config import Settings
from jobstream._pipeline.limits.model import Limit, LimitKey
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted

T0 = 1_798_000_000_000  # 2026-12-23T08:26:40Z
MINUTE = 60_000
TOPICS = Topics(Settings())
ON_THE_INSTANT = Settings(fire_lead=0)
"""Most tests fire each job on its instant; tests/pipeline/timers/test_fire_lead.py fires
ahead."""


class TimersDriver(ProcessorDriver[TimerState]):
    """One runner iteration per step: each command piped (and committed) in turn, then the
    timers due on the clock fired."""

    processor: TimerProcessor

    def step(self, now: int, *events: Event) -> list[Output]:
        self.now_ms = now
        emits = [emit for event in events for emit in self.pipe(topic_of(event), event)]
        return emits + self.advance()


def topic_of(event: Event) -> str:
    """Retries come on jobs.retry, every other command on jobs.intake."""
    return TOPICS.retry if event.name == "RetryScheduled" else TOPICS.intake


def timers_driver(tmp_path: Path, *limits: Limit, settings: Settings = ON_THE_INSTANT,
                  **options: Any) -> TimersDriver:  # fmt: skip
    """A driver of the timers with ``settings`` and the rate ``limits`` in force, at T0."""
    timers = TimerProcessor(settings)
    for limit in limits:
        timers.logic.throttle.board.set(limit)
    return TimersDriver(timers, tmp_path, now_ms=T0, **options)


def driving(tmp_path: Path, *limits: Limit, settings: Settings = ON_THE_INSTANT,
            **options: Any) -> Iterator[TimersDriver]:  # fmt: skip
    """A ``driver`` fixture's body: :func:`timers_driver`, closed after the test."""
    driver = timers_driver(tmp_path, *limits, settings=settings, **options)
    yield driver
    driver.close()


def kinds(emits: list[Output]) -> list[str]:
    return [e.value.data["kind"] if e.value.name == "JobLifecycle" else e.value.name for e in emits]


def executions(emits: list[Output]) -> list[dict[str, Any]]:
    return [e.value.data for e in emits if e.value.name == "ExecutionRequested"]


# -- rate limits ------------------------------------------------------------------------

DUE = T0 + 1000
RENDER = LimitKey(job_type="image.render")
ALONE = Settings(fire_lead=0, timer_partitions=1)
"""One timer partition: it holds a limit's whole rate."""


def make_driver(tmp_path: Path, *limits: Limit, partitions: int = 1) -> TimersDriver:
    """A driver of ``partitions`` timer partitions' share of the ``limits``, on the instant."""
    return timers_driver(tmp_path, *limits,
                         settings=ALONE.model_copy(update={"timer_partitions": partitions}))


def load(driver: TimersDriver, count: int, **fields: object) -> list[str]:
    """``count`` image.render jobs submitted at T0, all due at DUE; their ids."""
    jobs = [submitted(now_ms=T0, run_at_ms=DUE, job_type="image.render", **fields)
            for _ in range(count)]  # fmt: skip
    for job in jobs:
        driver.step(T0, job)
    return [job.data["job_id"] for job in jobs]


def held(driver: TimersDriver, limit: LimitKey) -> int:
    """How many jobs ``limit`` holds back in its queue."""
    return sum(1 for _ in TimerState(PartitionBatch(driver.store())).held_by(limit.id))
