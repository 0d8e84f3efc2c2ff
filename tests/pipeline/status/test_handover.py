"""A grow of jobs.events at the status processor, driven with no broker
(pipeline/runtime/driver.py) on real RocksDB stores: each old partition hands every job
whose key moved to its new partition, exactly once, with its run; a job already there
wins; a new partition waits for its sources; a stray event is forwarded unprocessed; and
nothing expires during the grow, while a moved run's lease still expires at its new home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.layout import LAYOUT_KEY, SETTLED_HEADER, added
from jobstream._pipeline.growth.strays import FORWARDED_HEADER
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status import handover as status_handover
from jobstream._pipeline.status.logic import StatusPolicy
from jobstream._pipeline.status.processor import StatusProcessor
from jobstream._pipeline.status.record import EXECUTION_HEADER, INTERNAL, MOVED, internal_key
from jobstream._pipeline.status.state import (
    CHECKPOINT_PREFIX,
    LEASE_PREFIX,
    RECORD_PREFIX,
    JobRecord,
    StatusState,
)
from jobstream._pipeline.topics import Topics
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.handover import Handed

OLD, NEW = 2, 4
LEASE = 30_000
SETTINGS = Settings(events_partitions=OLD)
TOPICS = Topics(SETTINGS)
JOBS = [f"01JD3W6Q8Z5X7M2K4N9P{i:06d}" for i in range(40)]
RUNNING = JOBS[::2]
"""Started, with a lease (and a checkpoint); the others succeeded."""
_, DECODE = make_serde()

Driver = ProcessorDriver[Any]


def home(job_id: str, count: int) -> int:
    return java_partition(job_id.encode(), count)


def moves(job_id: str) -> bool:
    return home(job_id, OLD) != home(job_id, NEW)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Driver]:
    processor = StatusProcessor(SETTINGS, StatusPolicy(lease_ms=LEASE))
    driver: Driver = ProcessorDriver(processor, tmp_path, partitions=range(NEW), now_ms=T0)
    for q in range(OLD, NEW):  # what `jobstream topics grow` writes to the new partitions
        batch = PartitionBatch(driver.store(q))
        processor.restore(batch, internal_key(LAYOUT_KEY), added(OLD, NEW).encode(), INTERNAL)
        batch.commit(None)
    processor.inputs_counted({TOPICS.events: OLD, TOPICS.status_handover: OLD})
    for job_id in JOBS:
        run = ev.execution(job_id, epoch=T0)
        folded = [ev.scheduled(job_id), ev.fired(run), ev.outcome("STARTED", run)]
        if job_id in RUNNING:
            folded.append(ev.outcome("HEARTBEAT", run, checkpoint={
                "state": b"half", "json": False, "attempt": 1,
                "execution_id": run["execution_id"], "at_ms": T0 + 2}))  # fmt: skip
        else:
            folded.append(ev.outcome("SUCCEEDED", run, result='"ok"'))
        for event in folded:
            send(driver, event, OLD)
    yield driver
    driver.close()


def send(driver: Driver, event: Any, count: int, partition: int | None = None) -> list[Output]:
    key = event.job_id.encode()
    at = home(event.job_id, count) if partition is None else partition
    return driver.pipe(TOPICS.events, ev.as_event(event), key=key, partition=at)


def grow(driver: Driver) -> list[Output]:
    """The runner reads the new count (its rebalance), then punctuates."""
    driver.processor.inputs_counted({TOPICS.events: NEW, TOPICS.status_handover: NEW})
    return driver.advance()


def handed(outputs: list[Output]) -> list[Output]:
    return [o for o in outputs if o.topic == TOPICS.status_handover and o.key is not None]


def markers(outputs: list[Output]) -> list[Output]:
    return [o for o in outputs if dict(o.headers or ()).get(SETTLED_HEADER)]


def read_back(driver: Driver, outputs: list[Output]) -> list[Output]:
    """The outputs read on their partitions, which are then read to their end."""
    out = driver.feed([Handed(o, n) for n, o in enumerate(outputs)])
    for p in range(NEW):
        driver.task.reached_end(p)
    return out


def keys(driver: Driver, partition: int, prefix: bytes) -> list[bytes]:
    upper = bytes([prefix[0] + 1])
    return [k for k, _ in PartitionBatch(driver.store(partition)).scan(prefix, upper)]


def record(driver: Driver, partition: int, job_id: str) -> JobRecord | None:
    return StatusState(PartitionBatch(driver.store(partition))).get(job_id)


def last_logged(driver: Driver, partition: int, job_id: str) -> tuple[Any, ...] | None:
    """The job's last record on ``partition`` of jobs.status (the store's changelog)."""
    found = [r for r in driver.changelog[partition] if r[0] == job_id.encode()]
    return tuple(found[-1]) if found else None


def lost(outputs: list[Output]) -> list[tuple[str, int | None]]:
    found = []
    for o in outputs:
        if o.topic == TOPICS.events and not isinstance(o.value, bytes):
            data = o.value.data  # type: ignore[union-attr]
            if data.kind == "LOST":
                found.append((data.job_id, o.partition))
    return found


def test_each_moved_job_is_handed_over_once_with_its_run_and_its_lease(driver: Driver) -> None:
    before = {j: record(driver, home(j, OLD), j) for j in JOBS}
    assert driver.processor.held_inputs() == {(TOPICS.events, q) for q in range(OLD, NEW)}
    out = grow(driver)
    moved = handed(out)
    assert sorted(o.key for o in moved) == sorted(j.encode() for j in JOBS if moves(j))
    assert {o.key: o.partition for o in moved} == {o.key: home(o.key.decode(), NEW) for o in moved}  # type: ignore[union-attr]
    assert {(o.partition, o.headers) for o in markers(out)} == {
        (q, ((SETTLED_HEADER, f"{q % OLD}/{NEW}".encode()),)) for q in range(OLD, NEW)}
    for p in range(OLD):  # the old stores keep only what stays: records, runs, leases
        left = {k[1:].decode() for k in keys(driver, p, RECORD_PREFIX)}
        assert left == {j for j in JOBS if home(j, NEW) == p}
        assert all(k[1:].decode() in left for k in keys(driver, p, CHECKPOINT_PREFIX))
        assert len(keys(driver, p, LEASE_PREFIX)) == len(left & set(RUNNING))
    assert not read_back(driver, out)  # taking them in produces nothing
    assert driver.processor.held_inputs() == set()
    for j in JOBS:  # every job once, at its new home, as it was, its run with it
        q = home(j, NEW)
        assert record(driver, q, j) == before[j]
        assert all(record(driver, p, j) is None for p in range(NEW) if p != q)
        state = StatusState(PartitionBatch(driver.store(q)))
        assert (state.get_execution(j) is not None) == (j in RUNNING)
        assert (state.get_checkpoint(j) is not None) == (j in RUNNING)
    for j in JOBS:  # on jobs.status: a tombstone marked moved where it was, its record here
        if moves(j):
            left_behind = last_logged(driver, home(j, OLD), j)
            assert left_behind is not None and left_behind[1:] == (None, MOVED)
        _, value, headers = last_logged(driver, home(j, NEW), j) or (None, None, ())
        if moves(j):
            assert value == before[j].status_json()  # type: ignore[union-attr]
            assert (EXECUTION_HEADER in dict(headers)) == (j in RUNNING)
    for q in range(NEW):
        assert len(keys(driver, q, LEASE_PREFIX)) == sum(home(j, NEW) == q for j in RUNNING)
    assert not lost(driver.advance(LEASE - 10)), "leases keep their deadline"
    expired = lost(driver.advance(10))
    assert sorted(expired) == sorted((j, home(j, NEW)) for j in RUNNING)
    assert driver.processor.counters()["handed_over"] == len(moved)
    assert driver.processor.counters()["taken_over"] == len(moved)


def test_a_job_already_at_its_new_home_keeps_its_record(driver: Driver) -> None:
    job = next(j for j in RUNNING if moves(j))
    out = grow(driver)
    # A record of the job started at its new home before the handover was read (a
    # producer with fresh metadata, read there before the hold).
    send(driver, ev.scheduled(job, at_ms=T0 + 5), NEW)
    read_back(driver, out)
    now = record(driver, home(job, NEW), job)
    assert now is not None and now.state == "SCHEDULED"
    assert driver.processor.counters()["kept_over"] == 1


def test_a_new_partition_waits_and_expires_nothing_until_its_sources_settled(
    driver: Driver,
) -> None:
    out = grow(driver)
    read_back(driver, [o for o in out if o not in markers(out)])
    assert driver.processor.held_inputs() == {(TOPICS.events, q) for q in range(OLD, NEW)}
    early = {j for j, _ in lost(driver.advance(10 * LEASE))}
    assert early == {j for j in RUNNING if not moves(j)}, "none expires at a waiting partition"
    read_back(driver, markers(out))
    assert driver.processor.held_inputs() == set()
    assert {j for j, _ in lost(driver.advance())} == {j for j in RUNNING if moves(j)}


def test_an_old_partition_handing_over_expires_nothing(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(status_handover, "MOVES_MOST", 1)
    out = grow(driver)
    assert len(handed(out)) == OLD, "one move per partition and transaction"
    expired = lost(out)
    while len(markers(out)) < NEW - OLD:
        more = driver.advance(LEASE)
        unsettled = {p for p in range(OLD) if driver.processor.handover.busy(p)}
        expired += lost(more)
        assert not [j for j, p in lost(more) if p in unsettled]
        out += more
    assert not [j for j, _ in expired if moves(j)], "a job is declared lost only at its home"
    read_back(driver, [o for o in out if o.topic == TOPICS.status_handover])
    expired += lost(driver.advance())
    assert sorted(j for j, _ in expired) == sorted(RUNNING), "each once"


def test_a_stray_event_is_forwarded_to_its_home_unprocessed(driver: Driver) -> None:
    job = next(j for j in RUNNING if moves(j))
    out = grow(driver)
    read_back(driver, out)
    run = ev.execution(job, epoch=T0)
    # A producer that still has the old count writes the SUCCEEDED to the old partition.
    forwarded = send(driver, ev.outcome("SUCCEEDED", run, result='"ok"'), OLD)
    assert [(o.topic, o.key, o.partition) for o in forwarded] == [
        (TOPICS.events, job.encode(), home(job, NEW))]
    origin = f"{TOPICS.events}/{home(job, OLD)}/".encode()
    assert dict(forwarded[0].headers or ())[FORWARDED_HEADER].startswith(origin)
    assert record(driver, home(job, OLD), job) is None
    assert record(driver, home(job, NEW), job).state == "RUNNING"  # type: ignore[union-attr]
    read_back(driver, forwarded)
    assert record(driver, home(job, NEW), job).state == "SUCCEEDED"  # type: ignore[union-attr]


def test_the_grow_command_plans_the_changelog_first_and_refuses_a_shrink() -> None:
    from jobstream._pipeline.errors import ValidationError
    from jobstream._pipeline.status.grow import plan_events_grow

    names = (TOPICS.events, TOPICS.status_handover, TOPICS.status)
    plan = plan_events_grow(TOPICS, dict.fromkeys(names, 6), 12)
    assert (plan.old, plan.grow_changelog, plan.mark_new) == (6, True, True)
    assert plan.grow_inputs == (TOPICS.events, TOPICS.status_handover)
    assert plan_events_grow(TOPICS, dict.fromkeys(names, 12), 12).nothing_to_do
    with pytest.raises(ValidationError, match="--events-partitions"):
        plan_events_grow(TOPICS, dict.fromkeys(names, 6), 4)


def test_a_store_beyond_the_configured_count_is_laid_out_for_the_live_one(tmp_path: Path) -> None:
    processor = StatusProcessor(SETTINGS, StatusPolicy(lease_ms=LEASE))
    driver: Driver = ProcessorDriver(processor, tmp_path, partitions=range(NEW), now_ms=T0)
    processor.inputs_counted({TOPICS.events: NEW, TOPICS.status_handover: NEW})
    try:
        send(driver, ev.scheduled(JOBS[0]), NEW)  # topics made with more than the setting
        assert processor.held_inputs() == set()
        assert not handed(driver.advance())
    finally:
        driver.close()


def test_a_forwarded_event_that_comes_after_newer_ones_is_late_not_a_duplicate(
    driver: Driver,
) -> None:
    """The retry of a job whose first attempt's FAILED took the grow's detour: the timers'
    FIRED of attempt 2 reached the new home first."""
    job = next(j for j in JOBS if moves(j) and j not in RUNNING)
    out = grow(driver)
    read_back(driver, out)
    stale = ev.outcome("HEARTBEAT", ev.execution(job, epoch=T0 - 1))  # an older epoch's
    raw = driver.serialize(ev.as_event(stale))
    copy = Output(TOPICS.events, job.encode(), raw, home(job, NEW),
                  [(FORWARDED_HEADER, f"{TOPICS.events}/{home(job, OLD)}/3".encode())])
    assert driver.feed([Handed(copy, 0)]) == []
    assert driver.processor.counters()["late"] == 1
    assert driver.processor.counters()["duplicates"] == 0
    direct = send(driver, stale, NEW)  # the same, not forwarded: a zombie's, reported
    assert [o.value.data.kind for o in direct] == ["DUPLICATE"]  # type: ignore[union-attr]
