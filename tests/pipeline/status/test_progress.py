"""A run's progress in its job's status: folded from its HEARTBEATs (the pure machine, then
the processor on real RocksDB files with every event through Avro), fenced by epoch, kept
when the run ends and cleared for the next one, and shown by ``jobstream status``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from jobstream._pipeline.model.records import JobLifecycle, Progress
from jobstream._pipeline.serde import JobState, decode_status
from jobstream._pipeline.status.machine import Verdict, transition
from jobstream._pipeline.status.query import status_table
from jobstream._pipeline.status.state import JobRecord
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.status import (
    LEASE,
    StatusDriver,
    lifecycles,
    status_driver,
    statuses,
)

S = JobState
JOB = "01JD3W6Q8Z5X7M2K4N9P0R1S2T"
E1, E2 = T0, T0 + 60_000


def progress(fraction: float, message: str | None = None, at_ms: int = T0) -> Progress:
    return Progress(fraction=fraction, message=message, at_ms=at_ms)


def beat(run: dict[str, Any], fraction: float | None = None, message: str | None = None,
         *, at_ms: int | None = None) -> JobLifecycle:  # fmt: skip
    """The run's HEARTBEAT, carrying a progress report unless ``fraction`` is None."""
    at = at_ms or run["epoch"] + 5
    report = None if fraction is None else progress(fraction, message, at)
    return ev.outcome("HEARTBEAT", run, at_ms=at, progress=report)


def fold(record: JobRecord | None, *events: JobLifecycle) -> JobRecord:
    for event in events:
        decision = transition(record, event)
        assert decision.verdict is Verdict.APPLIED, (event["kind"], decision.reason)
        record = decision.record
    assert record is not None
    return record


# -- the machine -----------------------------------------------------------------------------


def test_a_heartbeat_with_progress_sets_it_and_a_plain_one_keeps_it() -> None:
    run = ev.execution(JOB, epoch=E1)
    running = fold(None, ev.fired(run), ev.outcome("STARTED", run))
    assert running.progress is None
    half = fold(running, beat(run, 0.5, "half way", at_ms=E1 + 10))
    assert half.progress == progress(0.5, "half way", E1 + 10)
    assert half.state is S.RUNNING
    assert fold(half, beat(run)).progress == half.progress, "a plain heartbeat says nothing new"
    later = fold(half, beat(run, 0.75, None, at_ms=E1 + 20))
    assert later.progress == progress(0.75, None, E1 + 20), "a report replaces the whole"


def test_progress_stays_when_the_run_ends() -> None:
    run = ev.execution(JOB, epoch=E1)
    done = fold(None, ev.fired(run), ev.outcome("STARTED", run), beat(run, 1.0, "done"),
                ev.outcome("SUCCEEDED", run, result='"ok"'))  # fmt: skip
    assert done.state is S.SUCCEEDED
    assert done.progress == progress(1.0, "done", E1 + 5)


def test_progress_of_a_stale_epoch_is_a_duplicate_and_changes_nothing() -> None:
    old, new = ev.execution(JOB, epoch=E1), ev.execution(JOB, epoch=E2, attempt=2)
    running = fold(None, ev.fired(new), ev.outcome("STARTED", new), beat(new, 0.2, "new run"))
    decision = transition(running, beat(old, 0.9, "a zombie"))
    assert decision.verdict is Verdict.DUPLICATE
    assert decision.record is not None and decision.record.progress == running.progress


def test_progress_of_a_finished_execution_is_a_duplicate() -> None:
    run = ev.execution(JOB, epoch=E1)
    done = fold(None, ev.fired(run), ev.outcome("STARTED", run), beat(run, 0.5),
                ev.outcome("SUCCEEDED", run))  # fmt: skip
    decision = transition(done, beat(run, 0.9, "after the end"))
    assert decision.verdict is Verdict.DUPLICATE
    assert decision.record is not None and decision.record.progress == progress(0.5, None, E1 + 5)


def test_an_earlier_attempts_progress_never_shows_on_the_next() -> None:
    first = ev.execution(JOB, epoch=E1)
    failed = fold(None, ev.fired(first), ev.outcome("STARTED", first), beat(first, 0.6, "first"),
                  ev.outcome("FAILED", first))  # fmt: skip
    assert failed.state is S.FAILED_RETRYING
    assert failed.progress == progress(0.6, "first", E1 + 5), "where the failed attempt got to"
    retry = ev.execution(JOB, epoch=E2, attempt=2)
    queued = fold(failed, ev.retry_scheduled(first, retry_at_ms=E2), ev.fired(retry))
    assert queued.progress is None, "cleared when the next attempt fires"
    started = fold(failed, ev.outcome("STARTED", retry))  # a FIRED not read yet
    assert (started.state, started.attempt, started.progress) == (S.RUNNING, 2, None)


def test_a_redelivered_run_of_the_same_execution_starts_from_nothing() -> None:
    run = ev.execution(JOB, epoch=E1)
    running = fold(None, ev.fired(run), ev.outcome("STARTED", run, worker="a"),
                   beat(run, 0.7, "on a"))  # fmt: skip
    again = transition(running, ev.outcome("STARTED", run, worker="b"))
    assert again.verdict is Verdict.APPLIED and again.rerun_of == "a"
    assert again.record is not None and again.record.progress is None


@pytest.mark.parametrize(("sent", "folded"), [
    (progress(7.5, "x" * 500), progress(1.0, "x" * 200)),
    (progress(-3.0, "back"), progress(0.0, "back")),
])  # fmt: skip
def test_a_faulty_writers_progress_is_held_to_what_jobs_status_allows(
    sent: Progress, folded: Progress
) -> None:
    run = ev.execution(JOB, epoch=E1)
    running = fold(None, ev.fired(run), ev.outcome("STARTED", run))
    record = fold(running, ev.outcome("HEARTBEAT", run, progress=sent))
    assert record.progress == folded
    assert decode_status(record.status_json()).progress is not None, "readers accept it"


def test_a_fraction_that_is_no_number_keeps_the_progress_held() -> None:
    run = ev.execution(JOB, epoch=E1)
    half = fold(None, ev.fired(run), ev.outcome("STARTED", run), beat(run, 0.5, "half"))
    assert fold(half, ev.outcome("HEARTBEAT", run, progress=progress(math.nan))).progress == (
        half.progress)


# -- the processor: through Avro, on RocksDB, to jobs.status ---------------------------------


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path)
    yield driver
    driver.close()


def test_each_report_writes_a_status_and_renews_the_lease(driver: StatusDriver) -> None:
    run = ev.execution(JOB, epoch=E1)
    driver.step(E1, ev.fired(run), ev.outcome("STARTED", run))
    assert driver.step(E1 + 1000, beat(run)) == [], "a plain heartbeat writes no status"
    (written,) = statuses(driver.step(E1 + 20_000, beat(run, 0.4, "tiles 4/10", at_ms=E1 + 19_990)))
    assert written.state is S.RUNNING and written.updated_at_ms == E1 + 20_000
    assert written.progress is not None
    assert (written.progress.fraction, written.progress.message, written.progress.at_ms) == (
        0.4, "tiles 4/10", E1 + 19_990)
    value = orjson.loads(driver.record().status_json())  # type: ignore[union-attr]
    assert value["progress"] == {"fraction": 0.4, "message": "tiles 4/10", "at_ms": E1 + 19_990}
    assert driver.step(E1 + 20_000 + LEASE - 1) == [], "the report renewed the lease"
    assert [e["kind"] for e in lifecycles(driver.step(E1 + 20_000 + LEASE))] == ["LOST"]


def test_a_zombies_report_is_recorded_as_duplicate_and_the_status_keeps_the_live_runs(
    driver: StatusDriver,
) -> None:
    old, new = ev.execution(JOB, epoch=E1), ev.execution(JOB, epoch=E2, attempt=2)
    driver.step(E1, ev.fired(old), ev.outcome("STARTED", old, worker="a"))
    driver.step(E2, ev.fired(new), ev.outcome("STARTED", new, worker="b"),
                beat(new, 0.3, "live", at_ms=E2 + 1))  # fmt: skip
    emits = driver.step(E2 + 10, beat(old, 0.95, "zombie", at_ms=E2 + 9))
    assert [e["kind"] for e in lifecycles(emits)] == ["DUPLICATE"]
    assert statuses(emits) == []
    record = driver.record()
    assert record is not None and record.progress == progress(0.3, "live", E2 + 1)


def test_the_last_report_before_the_outcome_is_the_ended_jobs_progress(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=E1)
    driver.step(E1, ev.fired(run), ev.outcome("STARTED", run))
    emits = driver.step(E1 + 100, beat(run, 1.0, "all done"), ev.outcome("SUCCEEDED", run))
    assert [(s.state, s.progress.fraction if s.progress else None) for s in statuses(emits)] == [
        (S.RUNNING, 1.0), (S.SUCCEEDED, 1.0)]  # fmt: skip
    assert statuses(emits)[-1].progress.message == "all done"  # type: ignore[union-attr]


# -- jobstream status ------------------------------------------------------------------------


def test_the_status_table_shows_the_percentage_and_message_as_plain_text() -> None:
    run = ev.execution(JOB, epoch=E1)
    record = fold(None, ev.fired(run), ev.outcome("STARTED", run),
                  beat(run, 0.425, "[bold]resizing[/] tiles"))  # fmt: skip
    other = fold(None, ev.scheduled("01JD3W6Q8Z5X7M2K4N9P0R1S2V"))
    console = Console(width=250, record=True)
    console.print(status_table({JOB: record.to_status(),
                                other.job_id: other.to_status()}))  # fmt: skip
    text = console.export_text()
    assert "progress" in text.splitlines()[1]
    row = next(line for line in text.splitlines() if JOB in line)
    assert "42% [bold]resizing[/] tiles" in row, "a handler's message is no console markup"
