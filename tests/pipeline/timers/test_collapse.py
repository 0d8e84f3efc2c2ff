"""Debounce and singleton keys at the timers, through the runtime's driver: real RocksDB, a
clock of the test's own. The run a window submits, and a singleton job let through, go to
jobs.intake; a test pipes them back as the broker would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.model.collapse import collapse_key
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.records import JobSubmitted
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.runtime.processor import Output
from jobstream._pipeline.serde import Event
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from tests.pipeline.timers.test_workflow import data, lifecycle
from tests.support.workflows import rebuilt

pytestmark = pytest.mark.fast

SETTINGS = Settings(timer_partitions=1, fire_lead=0)
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
DEBOUNCE = {"debounce": {"key": "customer-42", "window_ms": 1000, "max_delay_ms": 3000}}


def request(n: int, keys: dict[str, Any], now_ms: int) -> Event:
    return JobRequest(job_type="recompute", owner="acme", params={"n": n},
                      keys=keys).to_event(now_ms)  # fmt: skip


def submissions(outputs: list[Output]) -> list[JobSubmitted]:
    """The JobSubmitted records the timers sent to jobs.intake."""
    return [o.value.data for o in outputs
            if o.topic == TOPICS.intake and isinstance(o.value, Event)]  # fmt: skip


def collapsed(outputs: list[Output]) -> dict[str, str]:
    """Each COLLAPSED job id and the run it joined."""
    return {o.value.data["job_id"]: o.value.data["joined_job_id"] for o in outputs
            if isinstance(o.value, Event) and o.value.data.get("kind") == "COLLAPSED"}  # fmt: skip


def back(timers: ProcessorDriver[TimerState], outputs: list[Output]) -> list[Output]:
    """Pipe the submissions the timers sent to jobs.intake back in, as the broker would."""
    found = []
    for job in submissions(outputs):
        found += timers.pipe(TOPICS.intake, Event("JobSubmitted", job), key=job.job_id.encode())
    return found


@pytest.fixture
def timers(tmp_path: Path) -> Iterator[ProcessorDriver[TimerState]]:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "a", now_ms=T0)
    yield driver
    driver.close()


def test_a_burst_inside_the_window_runs_once_after_it_with_the_last_params(
    timers: ProcessorDriver[TimerState],
) -> None:
    ids, outputs = [], []
    for n in range(50):
        event = request(n, DEBOUNCE, timers.now_ms)
        ids.append(event.data.job_id)
        outputs += timers.pipe(TOPICS.intake, event)
        timers.now_ms += 10
    joined = collapsed(outputs)
    assert set(joined) == set(ids), "every submission is on record"
    assert len(set(joined.values())) == 1, "all joined one run"
    (run_id,) = set(joined.values())
    assert submissions(outputs) == [] and lifecycle(outputs).count(("RUN", run_id)) == 0
    assert timers.advance(980) == [], "the window is still open one window after the last"
    closed = timers.advance(20)
    (run,) = submissions(closed)
    assert run.job_id == run_id and run.spec.params == '{"n":49}'
    assert run.spec.job_keys is None, "not debounced again"
    fired = back(timers, closed) + timers.advance(0)
    assert ("RUN", run_id) in lifecycle(fired)
    assert data(fired, "ExecutionRequested", run_id)["spec"]["params"] == '{"n":49}'


def test_keep_first_runs_the_first_params(timers: ProcessorDriver[TimerState]) -> None:
    keys = {"debounce": {**DEBOUNCE["debounce"], "keep": "FIRST"}}
    for n in range(3):
        timers.pipe(TOPICS.intake, request(n, keys, timers.now_ms))
    (run,) = submissions(timers.advance(1000))
    assert run.spec.params == '{"n":0}'


def test_a_steady_stream_runs_at_the_maximum_delay_and_the_next_opens_a_window(
    timers: ProcessorDriver[TimerState],
) -> None:
    runs: list[JobSubmitted] = []
    joined: dict[str, str] = {}
    for n in range(40):  # one every 100 ms for 4 s: the window never goes quiet
        outputs = timers.pipe(TOPICS.intake, request(n, DEBOUNCE, timers.now_ms))
        joined.update(collapsed(outputs))
        runs += submissions(outputs)
        runs += submissions(timers.advance(100))
    assert len(runs) == 1, "closed by its maximum delay (3 s), not by quiet"
    assert runs[0].spec.params == '{"n":29}', "the last one within the 3 s"
    assert len(set(joined.values())) == 2, "the rest opened the next window"
    (second,) = submissions(timers.advance(1000))
    assert second.spec.params == '{"n":39}' and second.job_id != runs[0].job_id


def test_a_window_survives_a_restart_from_the_changelog(
    timers: ProcessorDriver[TimerState],
    tmp_path: Path,
) -> None:
    for n in range(3):
        timers.pipe(TOPICS.intake, request(n, DEBOUNCE, timers.now_ms))
    restored = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        (run,) = submissions(restored.advance(1000))
        assert run.spec.params == '{"n":2}'
    finally:
        restored.close()


def test_a_replayed_run_is_kept_once(timers: ProcessorDriver[TimerState]) -> None:
    first = request(0, DEBOUNCE, timers.now_ms)
    timers.pipe(TOPICS.intake, first)
    closed = timers.advance(1000)
    fired = back(timers, closed) + timers.advance(0)
    (run,) = submissions(closed)
    assert ("RUN", run.job_id) in lifecycle(fired)
    # jobs.intake replayed: the same first submission opens a window of the same run.
    timers.pipe(TOPICS.intake, first)
    (again,) = submissions(timers.advance(1000))
    assert again.job_id == run.job_id
    assert back(timers, [Output(TOPICS.intake, None, Event("JobSubmitted", again))]) == []


def test_a_submission_on_another_partition_is_forwarded_to_its_key(tmp_path: Path) -> None:
    settings = Settings(timer_partitions=4, fire_lead=0)
    topics = Topics(settings)
    timers = ProcessorDriver(TimerProcessor(settings), tmp_path / "p", partitions=range(4),
                             now_ms=T0)  # fmt: skip
    try:
        meeting = java_partition(collapse_key("acme", "debounce", "customer-42"), 4)
        other = (meeting + 1) % 4
        event = request(0, DEBOUNCE, T0)
        (forwarded,) = timers.pipe(topics.intake, event, partition=other)
        assert forwarded.topic == topics.intake and forwarded.partition == meeting
        assert forwarded.key == b"debounce:acme\x00customer-42"
        assert timers.changelog[other] == [], "nothing kept where it landed"
        joined = timers.pipe(topics.intake, forwarded.value, key=forwarded.key,  # type: ignore[arg-type]
                             partition=meeting)  # fmt: skip
        assert set(collapsed(joined)) == {event.data.job_id}
    finally:
        timers.close()


# -- singleton -----------------------------------------------------------------------------


def singleton(mode: str) -> dict[str, Any]:
    return {"singleton": {"key": "report", "mode": mode}}


def ended(job_id: str, now_ms: int) -> Event:
    return Event("SingletonEnded", {"job_id": job_id, "owner": "acme", "singleton_key": "report",
                                    "state": "SUCCEEDED", "ended_at_ms": now_ms})  # fmt: skip


def test_singleton_drop_keeps_the_current_job(timers: ProcessorDriver[TimerState]) -> None:
    first, second = request(1, singleton("DROP"), T0), request(2, singleton("DROP"), T0)
    admitted = timers.pipe(TOPICS.intake, first)
    (run,) = submissions(admitted)
    assert run.job_id == first.data.job_id and run.spec.labels[SINGLETON_LABEL] == "report"
    scheduled = back(timers, admitted)
    assert lifecycle(scheduled) == [("SCHEDULED", run.job_id)], "an ordinary job now"
    assert collapsed(timers.pipe(TOPICS.intake, second)) == {second.data.job_id: run.job_id}
    timers.pipe(TOPICS.intake, ended(run.job_id, timers.now_ms))
    third = request(3, singleton("DROP"), T0)
    assert [j.job_id for j in submissions(timers.pipe(TOPICS.intake, third))] == [
        third.data.job_id
    ], "free again once it ended"


def test_singleton_replace_waits_behind_the_current_and_replaces_the_waiting(
    timers: ProcessorDriver[TimerState],
) -> None:
    a, b, c = (request(n, singleton("REPLACE"), T0) for n in range(3))
    (current,) = submissions(timers.pipe(TOPICS.intake, a))
    waiting = timers.pipe(TOPICS.intake, b)
    assert submissions(waiting) == []
    assert ("HELD", b.data.job_id) in lifecycle(waiting)
    assert data(waiting, "HELD", b.data.job_id)["waiting_for"] == [current.job_id]
    replaced = timers.pipe(TOPICS.intake, c)
    assert collapsed(replaced) == {b.data.job_id: c.data.job_id}
    assert timers.pipe(TOPICS.intake, ended(b.data.job_id, T0)) == [], "not the current"
    (following,) = submissions(timers.pipe(TOPICS.intake, ended(current.job_id, T0)))
    assert following.job_id == c.data.job_id and following.spec.params == '{"n":2}'
    assert lifecycle(back(timers, [Output(TOPICS.intake, None,
                                          Event("JobSubmitted", following))])) == [
        ("SCHEDULED", c.data.job_id)]  # fmt: skip
    assert timers.pipe(TOPICS.intake, c) == [], "a replay of the current is a repeat"


def test_a_singleton_job_whose_id_is_known_frees_its_key(
    timers: ProcessorDriver[TimerState],
) -> None:
    keys = {**singleton("DROP")}
    first = JobRequest(job_type="recompute", owner="acme", idempotency_key="nightly-1",
                       keys=keys).to_event(T0)  # fmt: skip
    back(timers, timers.pipe(TOPICS.intake, first))
    timers.pipe(TOPICS.intake, ended(first.data.job_id, T0 + 1))
    again = JobRequest(job_type="recompute", owner="acme", idempotency_key="nightly-1",
                       keys=keys).to_event(T0 + 2)  # fmt: skip
    let_through = timers.pipe(TOPICS.intake, again)
    assert [j.job_id for j in submissions(let_through)] == [first.data.job_id]
    known = [o for o in back(timers, let_through) if o.value.name == "SingletonEnded"]
    assert [(o.key, o.value.data.state) for o in known] == [
        (collapse_key("acme", "singleton", "report"), "DUPLICATE")], "the key told"  # fmt: skip
    timers.pipe(TOPICS.intake, known[0].value, key=known[0].key)
    third = request(3, keys, T0 + 3)
    assert [j.job_id for j in submissions(timers.pipe(TOPICS.intake, third))] == [
        third.data.job_id], "the key is free again"  # fmt: skip


def test_a_waiting_replace_job_cancelled_meanwhile_is_cancelled_when_it_comes(
    timers: ProcessorDriver[TimerState],
) -> None:
    a, b = (request(n, singleton("REPLACE"), T0) for n in range(2))
    (current,) = submissions(timers.pipe(TOPICS.intake, a))
    timers.pipe(TOPICS.intake, b)  # waits on the key's partition
    cancel = Event("JobCancelled", {"job_id": b.data.job_id, "workflow_id": None,
                                    "requested_at_ms": T0 + 1, "reason": "not needed",
                                    "requested_by": "tests"})  # fmt: skip
    timers.pipe(TOPICS.intake, cancel, key=b.data.job_id.encode())  # its own partition's
    released = timers.pipe(TOPICS.intake, ended(current.job_id, T0 + 2))
    assert [j.job_id for j in submissions(released)] == [b.data.job_id]
    assert lifecycle(back(timers, released)) == [("CANCELLED", b.data.job_id)]
