"""jobs.status as the status store's changelog (docs/adr/0014): which records a transaction
writes and with which headers, and a store restored from them, on real RocksDB files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from jobstream._pipeline.growth.layout import LAYOUT_KEY, Layout, fresh
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.runtime import Output
from jobstream._pipeline.serde import JobState, decode_status, encode_status
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.status.record import (
    CHECKPOINT_HEADER,
    EXECUTION_HEADER,
    INTERNAL,
    MOVED,
    RECORD_HEADER,
    StatusFold,
    internal_key,
    is_internal,
    is_moved,
)
from jobstream._pipeline.status.state import JobRecord, StatusState
from tests.pipeline.status import events as ev
from tests.support.status import (
    JOB,
    LEASE,
    PARTITION,
    STATUS,
    StatusDriver,
    lifecycles,
    status_driver,
)

S = JobState
E1 = ev.T0


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path / "live")
    yield driver
    driver.close()


def written(emits: list[Output]) -> list[Output]:
    return [e for e in emits if e.topic == STATUS]


def headers_of(output: Output) -> dict[str, bytes]:
    return dict(output.headers or ())


def start(driver: StatusDriver) -> dict[str, Any]:
    run = ev.execution(JOB, epoch=E1)
    driver.step(E1, ev.fired(run), ev.outcome("STARTED", run, worker="w1"))
    return run


def test_a_running_jobs_records_carry_its_execution_and_checkpoint_until_it_ends(
    driver: StatusDriver,
) -> None:
    run = ev.execution(JOB, epoch=E1)
    [queued] = written(driver.step(E1, ev.fired(run)))
    assert set(headers_of(queued)) == {RECORD_HEADER}, "no run yet: the internal fields only"
    [started] = written(driver.step(E1 + 1, ev.outcome("STARTED", run, worker="w1")))
    assert started.key == JOB.encode() and started.partition == PARTITION
    assert decode_status(started.value).state is S.RUNNING  # type: ignore[arg-type]
    internal = orjson.loads(headers_of(started)[RECORD_HEADER])
    assert (internal["worker_id"], internal["execution_id"]) == ("w1", run["execution_id"])
    assert "lease_deadline_ms" not in internal, "a restore gives the lease afresh"
    assert orjson.loads(headers_of(started)[EXECUTION_HEADER]) == run

    saved = {"state": b"step 3", "json": False, "attempt": 1,
             "execution_id": run["execution_id"], "at_ms": E1 + 5}  # fmt: skip
    [beat] = written(driver.step(E1 + 5, ev.outcome("HEARTBEAT", run, checkpoint=saved)))
    assert decode_status(beat.value) == decode_status(started.value), "no public change"  # type: ignore[arg-type]
    assert set(headers_of(beat)) == {RECORD_HEADER, EXECUTION_HEADER, CHECKPOINT_HEADER}
    progress = {"fraction": 0.5, "message": "half", "at_ms": E1 + 6}
    [moved_on] = written(driver.step(E1 + 6, ev.outcome("HEARTBEAT", run, progress=progress)))
    assert headers_of(moved_on)[EXECUTION_HEADER] == headers_of(started)[EXECUTION_HEADER]
    assert headers_of(moved_on)[CHECKPOINT_HEADER] == headers_of(beat)[CHECKPOINT_HEADER], (
        "compaction keeps the last record: each one carries the run whole")

    [done] = written(driver.step(E1 + 9, ev.outcome("SUCCEEDED", run)))
    assert set(headers_of(done)) == {RECORD_HEADER}, "the run ended: nothing to carry"
    assert decode_status(done.value).state is S.SUCCEEDED  # type: ignore[arg-type]


def test_a_change_of_the_lease_alone_writes_nothing(driver: StatusDriver) -> None:
    run = start(driver)
    logged = len(driver.changelog[PARTITION])
    for at in (E1 + 10_000, E1 + 20_000, E1 + 30_000):
        assert driver.step(at, ev.outcome("HEARTBEAT", run)) == []
    assert len(driver.changelog[PARTITION]) == logged, "three heartbeats, no record"
    record = driver.record()
    assert record is not None and record.lease_deadline_ms == E1 + 30_000 + LEASE, (
        "the store keeps the renewed lease")


def test_an_expired_lease_writes_the_fenced_run_without_its_execution(
    driver: StatusDriver,
) -> None:
    start(driver)
    emits = driver.step(E1 + LEASE)
    assert [e.kind for e in lifecycles(emits)] == ["LOST"]
    [fenced] = written(emits)
    assert set(headers_of(fenced)) == {RECORD_HEADER}
    run_id = orjson.loads(headers_of(fenced)[RECORD_HEADER])["execution_id"]
    assert run_id in orjson.loads(headers_of(fenced)[RECORD_HEADER])["finished"]


def restore_into(driver: StatusDriver, path: Path, at_ms: int) -> StatusDriver:
    """A second processor whose store is restored, at ``at_ms``, from ``driver``'s jobs.status
    records, through the processor's own restore."""
    twin = status_driver(path)
    twin.now_ms = at_ms
    tx = PartitionBatch(twin.store(PARTITION))
    log = driver.changelog[PARTITION]
    for key, value, *headers in log:
        twin.processor.restore(tx, key, value, headers[0] if headers else None)
    tx.commit(len(log) - 1)
    return twin


def test_a_restored_running_job_gets_a_full_lease_from_the_restore(
    driver: StatusDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = start(driver)
    driver.step(E1 + 20_000, ev.outcome("HEARTBEAT", run))  # not on jobs.status
    late = E1 + 20_000 + LEASE - 1_000  # the live lease ends in a second
    monkeypatch.setattr("jobstream._pipeline.clock.now_ms", lambda: late)
    twin = restore_into(driver, tmp_path / "twin", late)
    restored = twin.record()
    assert restored is not None and restored.lease_deadline_ms == late + LEASE
    assert twin.execution() == driver.execution(), "the execution came back from the headers"
    assert lifecycles(twin.step(late + LEASE - 1)) == [], "no run declared lost before"
    [lost] = lifecycles(twin.step(late + LEASE))
    assert lost.kind == "LOST" and lost.execution is not None
    assert plain(lost.execution) == run
    assert twin.processor.counters()["restored_bare"] == 0
    twin.close()


def test_a_fenced_run_restored_gets_no_lease_and_a_purged_job_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobstream._pipeline.status.logic import StatusPolicy

    driver = status_driver(tmp_path / "live", StatusPolicy(lease_ms=LEASE, retention_ms=1000))
    start(driver)
    driver.step(E1 + LEASE)  # LOST: fenced, its LOST not read back yet
    driver.step(E1 + LEASE, ev.lifecycle("CANCELLED", "gone"))
    driver.step(E1 + LEASE + 1000)  # "gone" purged: its tombstone
    assert driver.changelog[PARTITION][-1] == (b"gone", None, ())
    monkeypatch.setattr("jobstream._pipeline.clock.now_ms", lambda: E1 + 2 * LEASE)
    twin = restore_into(driver, tmp_path / "twin", E1 + 2 * LEASE)
    assert twin.record("gone") is None
    fenced = twin.record()
    assert fenced is not None and fenced.lease_deadline_ms is None
    assert twin.execution() is None
    assert lifecycles(twin.step(E1 + 10 * LEASE)) == [], "a lease expires once"
    twin.close()
    driver.close()


def test_a_record_written_before_the_headers_restores_with_the_internal_defaults(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    twin = status_driver(tmp_path)
    old = JobRecord(job_id=JOB, state=S.SUCCEEDED, job_type="t", owner="o", attempt=1,
                    epoch=E1, updated_at_ms=E1, worker_id="w1", fires=1)  # fmt: skip
    tx = PartitionBatch(twin.store(PARTITION))
    twin.processor.restore(tx, JOB.encode(), encode_status(old.to_status()), None)
    tx.commit(0)
    restored = twin.record()
    assert restored is not None
    assert restored.to_status() == old.to_status(), "every public field as it was"
    assert (restored.worker_id, restored.fires, restored.finished) == (None, 0, ()), (
        "the internal ones take their defaults")
    assert twin.processor.counters()["restored_bare"] == 1
    assert any("internal fields" in r.getMessage() for r in caplog.records)
    twin.close()


@pytest.mark.parametrize("record", [
    JobRecord(job_id=JOB, state=S.SCHEDULED),
    JobRecord(job_id=JOB, state=S.RUNNING, job_type="t", owner="o", workflow_id="wf", attempt=2,
              epoch=E1, execution_id="x1", worker_id="w1", lease_deadline_ms=None,
              finished=("x0",), recurring=True, fires=3, waiting_for=(), labels={"a": "b"},
              params="{}", params_bytes=2, params_sha256="s", queue_expiry_ms=None,
              last_error={"error_type": "E", "message": "m"}, keys={"concurrency": "k"}),
    JobRecord(job_id=JOB, state=S.SUCCEEDED, purge_at_ms=E1 + 5, queue_expiry_ms=7,
              runs=1, result='{"ok": 1}'),
])  # fmt: skip
def test_a_record_is_the_status_and_its_internal_header(record: JobRecord) -> None:
    assert JobRecord.from_status(record.status_json(), record.internal_json()) == record


def test_the_layout_travels_as_an_internal_record_readers_skip(tmp_path: Path) -> None:
    driver = status_driver(tmp_path / "live")
    layout = Layout(count=4, old=2, settled=False)
    state = driver.processor.open(PartitionBatch(driver.store(PARTITION)), PARTITION)
    state.set_layout(layout)
    [(key, value, headers)] = state.flush()  # type: ignore[misc]
    assert (key, value, headers) == (internal_key(LAYOUT_KEY), layout.encode(), INTERNAL)
    assert is_internal(key, headers)
    twin = status_driver(tmp_path / "twin")
    tx = PartitionBatch(twin.store(PARTITION))
    twin.processor.restore(tx, key, value, headers)
    tx.commit(0)
    assert StatusState(PartitionBatch(twin.store(PARTITION))).layout() == layout
    assert twin.processor.counters()["restored_bare"] == 0
    driver.close()
    twin.close()


def test_internal_records_and_moved_tombstones_are_told_by_key_or_header() -> None:
    assert not is_internal(JOB.encode(), [(RECORD_HEADER, b"{}")])
    assert is_internal(internal_key(b"h"), None), "by its key alone"
    assert is_internal(b"h", INTERNAL), "by its header alone"
    assert is_moved(MOVED) and not is_moved(None) and not is_moved([(RECORD_HEADER, b"{}")])


@pytest.mark.parametrize("order", [(5, 11), (11, 5)])
def test_a_job_moved_by_a_grow_folds_to_its_newest_status_in_either_order(
    order: tuple[int, int],
) -> None:
    """The old partition holds the job's records then the moved tombstone, the new one its
    records since: a reader of both, whichever it reads first, keeps the new one's last."""
    job = JOB.encode()
    records = {
        5: [(JobRecord(job_id=JOB, state=S.RUNNING, updated_at_ms=E1).status_json(), ()),
            (None, MOVED)],
        11: [(JobRecord(job_id=JOB, state=S.RUNNING, updated_at_ms=E1).status_json(), ()),
             (JobRecord(job_id=JOB, state=S.SUCCEEDED, updated_at_ms=E1 + 9).status_json(), ())],
    }  # fmt: skip
    fold: StatusFold[bytes] = StatusFold()
    fold.fold(internal_key(LAYOUT_KEY), 5, fresh(6).encode(), INTERNAL)
    for partition in order:
        for value, headers in records[partition]:
            fold.fold(job, partition, value, headers)
    latest = fold.latest(lambda raw: decode_status(raw).updated_at_ms)
    assert list(latest) == [job], "the layout record is no job"
    assert decode_status(latest[job]).state is S.SUCCEEDED
    fold.fold(job, 11, None, None)  # purged after its retention
    assert fold.latest(lambda raw: 0) == {}


def test_a_partition_taken_in_again_gives_its_running_jobs_a_full_lease(
    driver: StatusDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its store kept from its files, while another process read the run's heartbeats: they
    are in no record, so the store's lease is older than the last heartbeat."""
    start(driver)  # lease until E1 + LEASE in this store
    driver.processor.revoked(PARTITION)  # the partition went to another process, came back
    back = E1 + LEASE - 1_000
    monkeypatch.setattr("jobstream._pipeline.clock.now_ms", lambda: back)
    assert lifecycles(driver.step(E1 + LEASE)) == [], "no run declared lost on a stale lease"
    record = driver.record()
    assert record is not None and record.lease_deadline_ms == back + LEASE
    assert [e.kind for e in lifecycles(driver.step(back + LEASE))] == ["LOST"]
