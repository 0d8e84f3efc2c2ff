"""A grow of jobs.intake at the timers, driven with no broker (pipeline/runtime/driver.py)
on real RocksDB stores: the old partitions hand each record whose home moved to its new
partition, exactly once, and every job then fires once, from its new home, on time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.layout import LAYOUT_KEY, SETTLED_HEADER, added
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from tests.support.handover import Handed
from tests.support.jobs import cancelled, cron_schedule, submitted
from tests.support.timers import MINUTE, T0, TimersDriver, executions, timers_driver
from tests.support.workflows import diamond, step_ended

OLD, NEW = 2, 4
SETTINGS = Settings(fire_lead=0, timer_partitions=OLD)
TOPICS = Topics(SETTINGS)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    driver = timers_driver(tmp_path, settings=SETTINGS, partitions=range(NEW))
    for q in range(OLD, NEW):  # what `jobstream topics grow` writes to the new partitions
        batch = PartitionBatch(driver.store(q))
        driver.processor.restore(batch, LAYOUT_KEY, added(OLD, NEW).encode())
        batch.commit(None)
    yield driver
    driver.close()


def submit(driver: TimersDriver, *events: object) -> None:
    for event in events:
        key = event.data["job_id"].encode()  # type: ignore[attr-defined]
        driver.pipe(TOPICS.intake, event, key=key, partition=java_partition(key, OLD))  # type: ignore[arg-type]


def moves(job_id: str) -> bool:
    return java_partition(job_id.encode(), OLD) != java_partition(job_id.encode(), NEW)


def ids_in(driver: TimersDriver, partition: int) -> set[str]:
    batch = PartitionBatch(driver.store(partition))
    return {key[1:].decode() for key, _ in batch.scan(b"j", b"k")}


def test_a_grow_hands_each_entry_to_its_new_home_once(driver: TimersDriver) -> None:
    due = T0 + MINUTE
    jobs = [submitted(run_at_ms=due + n, now_ms=T0) for n in range(200)]
    crons = [submitted(cron=cron_schedule("*/2 * * * *"), now_ms=T0) for _ in range(20)]
    gone = next(e for e in (submitted(run_at_ms=due, now_ms=T0) for _ in range(100))
                if moves(e.data["job_id"]))  # its cancel, sent with the old count, is forwarded
    submit(driver, *jobs, *crons, gone)
    ids = [e.data["job_id"] for e in (*jobs, *crons)]
    assert set().union(*(ids_in(driver, p) for p in range(OLD))) >= set(ids)
    assert driver.processor.held_inputs() == {(TOPICS.intake, 2), (TOPICS.intake, 3)}

    driver.processor.inputs_counted({TOPICS.intake: NEW, TOPICS.retry: NEW})
    handed: list[Output] = []
    for _ in range(5):  # the old partitions scan, hand over and settle
        handed += [o for o in driver.advance() if o.topic == TOPICS.retry]
    moved = [o for o in handed if not any(h == SETTLED_HEADER for h, _ in o.headers or ())]
    settled = [o for o in handed if o not in moved]
    assert sorted(o.partition for o in settled) == [2, 3]  # partition q hears from q mod 2
    assert moved and all(o.partition in (2, 3) for o in moved)
    # A cancel keyed with the old count is forwarded, unprocessed, to the job's new home.
    gone_key = gone.data["job_id"].encode()
    forwarded = driver.pipe(TOPICS.intake, cancelled(gone.data["job_id"]), key=gone_key,
                            partition=java_partition(gone_key, OLD))
    assert [(o.topic, o.partition) for o in forwarded] == [
        (TOPICS.intake, java_partition(gone_key, NEW))
    ]

    taken = Counter[str]()
    for n, out in enumerate(handed):
        before = set().union(*(ids_in(driver, p) for p in range(OLD, NEW)))
        driver.feed([Handed(out, n)])
        taken.update(set().union(*(ids_in(driver, p) for p in range(OLD, NEW))) - before)
    assert driver.processor.held_inputs() == set()
    for p in range(NEW):  # every entry in its home's store, and in no other
        homes = {i for i in ids if java_partition(i.encode(), NEW) == p}
        assert ids_in(driver, p) & set(ids) == homes, p
    assert all(n == 1 for n in taken.values())

    driver.feed([Handed(out, 999) for out in forwarded])
    fired = [run for _ in range(120) for run in executions(driver.advance(1000))]
    runs = Counter(r["job_id"] for r in fired)  # the crons' first run is at T0 + 80 s
    assert runs == Counter(ids), "a job lost, fired twice, or the cancelled one fired"
    assert all(r["fired_at_ms"] - r["scheduled_at_ms"] <= 2000 for r in fired)


def test_a_handed_over_entry_does_not_replace_one_already_at_home(tmp_path: Path) -> None:
    driver = timers_driver(tmp_path, settings=SETTINGS, partitions=range(NEW))
    try:
        job = submitted(run_at_ms=T0 + MINUTE, now_ms=T0)
        key = job.data["job_id"].encode()
        driver.pipe(TOPICS.intake, job, key=key, partition=java_partition(key, NEW))
        home = java_partition(key, NEW)
        raw = PartitionBatch(driver.store(home)).get(b"j" + key)
        assert raw is not None
        stale = raw.replace(b'"due_ms":', b'"due_ms":1', 1)
        driver.feed([Handed(Output(TOPICS.retry, key, stale, home,
                                   (("jobstream.handover", key),)), 0)])
        state = TimerState(PartitionBatch(driver.store(home)))
        entry = state.get(key.decode())
        assert entry is not None and entry.due_ms == T0 + MINUTE
    finally:
        driver.close()


def test_a_workflow_moves_whole_and_goes_on_at_its_new_home(driver: TimersDriver) -> None:
    workflow_id = next(w for w in (f"wf-{n}" for n in range(100)) if moves(w))
    old, new = java_partition(workflow_id.encode(), OLD), java_partition(workflow_id.encode(), NEW)
    submitted_at = driver.pipe(TOPICS.intake, diamond(T0, workflow_id=workflow_id),
                               key=workflow_id.encode(), partition=old)  # fmt: skip
    first = executions(submitted_at + driver.advance())  # step a runs; b, c, d wait for it
    assert len(first) == 1
    blocked = ids_in(driver, old) - {first[0]["job_id"]}
    assert len(blocked) == 3

    driver.processor.inputs_counted({TOPICS.intake: NEW, TOPICS.retry: NEW})
    handed = [o for _ in range(5) for o in driver.advance() if o.topic == TOPICS.retry]
    for n, out in enumerate(handed):
        driver.feed([Handed(out, n)])
    assert ids_in(driver, old) & blocked == set()
    assert ids_in(driver, new) >= blocked  # the blocked steps, out of any schedule
    nodes = {key for key, _ in PartitionBatch(driver.store(new)).scan(b"n", b"o")}
    assert len(nodes) == 4 and not list(PartitionBatch(driver.store(old)).scan(b"n", b"o"))

    ended = driver.pipe(TOPICS.intake, step_ended(first[0]["job_id"], workflow_id, "SUCCEEDED",
                                                  T0 + 1000), key=workflow_id.encode(),
                        partition=new)  # fmt: skip
    released = executions(ended + driver.advance(1000))
    assert len(released) == 2 and {r["job_id"] for r in released} < blocked


def test_a_waiting_partition_takes_in_only_submissions_that_meet_nothing(
    driver: TimersDriver,
) -> None:
    def record(event: object) -> Handed:
        value = driver.serialize(event)
        return Handed(Output(TOPICS.intake, b"k", value, 2), 0)

    admits = driver.processor.admits
    assert admits(record(submitted(run_at_ms=T0)))
    assert not admits(record(submitted(run_at_ms=T0, idempotency_key="again")))
    assert not admits(record(cancelled("JOBX")))
    assert not admits(record(diamond(T0)))
    assert not admits(Handed(Output(TOPICS.intake, b"k", b"not avro", 2), 0))


def test_a_store_beyond_the_configured_count_is_laid_out_for_the_live_one(
    tmp_path: Path,
) -> None:
    """jobs.intake made with more partitions than the setting, no grow: every store, those
    beyond the setting too, fires its own jobs and hands nothing over."""
    driver = timers_driver(tmp_path, settings=SETTINGS, partitions=range(NEW))
    try:
        driver.processor.inputs_counted({TOPICS.intake: NEW, TOPICS.retry: NEW})
        job = next(e for e in (submitted(run_at_ms=T0 + MINUTE, now_ms=T0) for _ in range(100))
                   if java_partition(e.data["job_id"].encode(), NEW) >= OLD)  # fmt: skip
        key = job.data["job_id"].encode()
        driver.pipe(TOPICS.intake, job, key=key, partition=java_partition(key, NEW))
        driver.advance(0)
        assert driver.processor.held_inputs() == set()
        fired = executions(driver.advance(MINUTE))
        assert [e["job_id"] for e in fired] == [job.data["job_id"]]
    finally:
        driver.close()
