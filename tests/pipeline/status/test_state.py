"""What the status processor keeps per job: the record's encoding, and one transaction's
reads and writes (each record decoded and encoded at most once, indexes kept current)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from jobstream._pipeline.model.records import (
    CronSchedule,
    ExecutionRequested,
    JobSpec,
    Priority,
    Progress,
    plain,
)
from jobstream._pipeline.serde import JobState, JobStatus, decode_status, encode_status
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.status.record import EXECUTION_HEADER, RECORD_HEADER
from jobstream._pipeline.status.state import Cancellation, JobRecord, RecordCache, StatusState
from tests.support.jobs import cron_schedule

S = JobState
JOB, OTHER = "01JD3W6Q8Z5X7M2K4N9P0R1S2T", "01JD3W6Q8Z5X7M2K4N9P0R1S2V"
T = 1_798_000_000_000

FULL = JobRecord(
    job_id=JOB, state=S.RUNNING, job_type="data.process", owner="tests", workflow_id="wf",
    attempt=2, epoch=T, priority=Priority.HIGH, scheduled_at_ms=T, next_fire_at_ms=T + 60_000,
    updated_at_ms=T + 1, last_error={"error_type": "ValueError", "message": "boom"},
    result=None, result_uri="s3://r", runs=3, duplicates=1, execution_id="x1",
    worker_id="w1", lease_deadline_ms=T + 30_000, finished=("x0", "y0"),
    cron=CronSchedule(expression="* * * * *"), recurring=True, fires=4, purge_at_ms=None,
)  # fmt: skip


def test_evolve_changes_only_what_it_is_given() -> None:
    evolved = FULL.evolve(state=S.SUCCEEDED, lease_deadline_ms=None, runs=4)
    assert (evolved.state, evolved.lease_deadline_ms, evolved.runs) == (S.SUCCEEDED, None, 4)
    unchanged = ("state", "lease_deadline_ms", "runs")
    assert [getattr(evolved, f) for f in JobRecord._fields if f not in unchanged] == [
        getattr(FULL, f) for f in JobRecord._fields if f not in unchanged]  # fmt: skip
    assert FULL.state is S.RUNNING and FULL.runs == 3, "the original is left as it was"
    assert FULL.evolve() == FULL


def test_evolve_refuses_a_field_the_record_lacks() -> None:
    with pytest.raises(TypeError, match="colour"):
        FULL.evolve(state=S.QUEUED, colour="red")


STORED = {
    "job_id": JOB, "state": "RUNNING", "job_type": "data.process", "owner": "tests",
    "workflow_id": "wf", "attempt": 2, "epoch": T, "priority": "HIGH", "scheduled_at_ms": T,
    "next_fire_at_ms": T + 60_000, "updated_at_ms": T + 1,
    "last_error": {"error_type": "ValueError", "message": "boom"}, "result": None,
    "result_uri": "s3://r", "runs": 3, "duplicates": 1, "execution_id": "x1", "worker_id": "w1",
    "lease_deadline_ms": T + 30_000, "finished": ["x0", "y0"],
    "cron": cron_schedule("* * * * *"), "recurring": True, "fires": 4,
    "purge_at_ms": None,
}  # fmt: skip
"""FULL as the stores and the changelog hold it (the frozen dataclass's ``asdict`` JSON)."""


def test_a_record_is_stored_as_before_and_decodes_back() -> None:
    # Stores and changelogs written by earlier versions keep decoding, and the reverse.
    assert FULL.encode() == orjson.dumps(STORED)
    assert JobRecord.decode(orjson.dumps(STORED)) == FULL
    new = JobRecord(job_id=OTHER, state=S.SCHEDULED)
    assert JobRecord.decode(new.encode()) == new
    assert isinstance(JobRecord.decode(new.encode()).finished, tuple)
    blocked = JobRecord(job_id=OTHER, state=S.BLOCKED, waiting_for=(JOB,))
    assert JobRecord.decode(blocked.encode()) == blocked


def test_the_records_a_record_holds_are_stored_as_objects_of_their_fields() -> None:
    cancelled = FULL.evolve(
        state=S.CANCELLED, progress=Progress(fraction=0.5, message="half", at_ms=T),
        cancellation=Cancellation(by="cli:ann@box", reason="why", at_ms=T, worker_id="w1"),
    )  # fmt: skip
    stored = {**STORED, "state": "CANCELLED",
              "cancellation": {"by": "cli:ann@box", "reason": "why", "at_ms": T,
                               "worker_id": "w1"},
              "progress": {"fraction": 0.5, "message": "half", "at_ms": T}}  # fmt: skip
    assert cancelled.encode() == orjson.dumps(stored)
    decoded = JobRecord.decode(orjson.dumps(stored))
    assert decoded == cancelled and isinstance(decoded.progress, Progress)
    assert isinstance(decoded.cron, CronSchedule) and decoded.priority is Priority.HIGH
    # A schedule stored with fields left out (a hand-made record) takes their defaults.
    partial = {**STORED, "cron": {"expression": "* * * * *", "timezone": "UTC"}}
    assert JobRecord.decode(orjson.dumps(partial)) == FULL


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PartitionStore]:
    store = PartitionStore(tmp_path / "p0")
    yield store
    store.close()


class Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.decoded: list[str] = []
        self.encoded: list[str] = []
        decode, encode = JobRecord.decode, JobRecord.encode

        def counted_decode(raw: bytes) -> JobRecord:
            record = decode(raw)
            self.decoded.append(record.job_id)
            return record

        def counted_encode(record: JobRecord) -> bytes:
            self.encoded.append(record.job_id)
            return encode(record)

        monkeypatch.setattr(JobRecord, "decode", staticmethod(counted_decode))
        monkeypatch.setattr(JobRecord, "encode", counted_encode)


def committed(store: PartitionStore, *records: JobRecord) -> None:
    state = StatusState(PartitionBatch(store))
    for record in records:
        state.put(record)
    state.flush()
    state.tx.commit(0)


def test_a_record_is_decoded_once_and_encoded_once_per_transaction(
    store: PartitionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued = FULL.evolve(state=S.QUEUED, lease_deadline_ms=None)
    committed(store, queued)
    stored, final = queued.encode(), queued.evolve(epoch=T + 4)
    calls = Calls(monkeypatch)
    state = StatusState(PartitionBatch(store))
    for epoch in range(T, T + 5):
        before = state.get(JOB)
        assert before is not None
        state.put(before.evolve(epoch=epoch))
    assert state.get(OTHER) is None and state.get(OTHER) is None
    assert calls.decoded == [JOB], "a record is read from the store once"
    assert calls.encoded == [], "nothing is encoded before the flush"
    assert state.tx.get(b"j" + JOB.encode()) == stored, "the store's copy waits for the flush"

    changelog = state.flush()
    assert calls.encoded == [JOB]
    assert state.flush() == changelog and calls.encoded == [JOB], (
        "a second flush re-encodes nothing"
    )
    assert changelog == [(JOB.encode(), final.status_json(),
                          [(RECORD_HEADER, final.internal_json())])]  # fmt: skip
    assert state.tx.get(b"j" + JOB.encode()) == JobRecord.encode(final)
    state.tx.commit(1)
    assert StatusState(PartitionBatch(store)).get(JOB) == final


def test_indexes_follow_the_records_within_a_transaction(store: PartitionStore) -> None:
    committed(store, FULL)  # RUNNING, lease until T + 30 s
    state = StatusState(PartitionBatch(store))
    assert state.expired_leases(T + 30_000, 10) == [FULL]
    state.put(FULL.evolve(lease_deadline_ms=T + 60_000))  # renewed, not yet flushed
    assert state.expired_leases(T + 30_000, 10) == []
    assert [r.lease_deadline_ms for r in state.expired_leases(T + 60_000, 10)] == [T + 60_000]
    done = FULL.evolve(state=S.SUCCEEDED, lease_deadline_ms=None, purge_at_ms=T + 90_000)
    state.put(done)
    assert state.expired_leases(T + 10**9, 10) == []
    assert state.purgeable(T + 90_000, 10) == [done]
    state.remove(JOB)
    assert state.get(JOB) is None
    assert state.purgeable(T + 10**9, 10) == []
    assert state.flush() == [(JOB.encode(), None, ())], "a tombstone, not marked moved"
    state.tx.commit(1)
    assert list(store.scan(b"\x01", b"\xff")) == [], "record and index keys are all gone"


def test_a_job_created_and_removed_in_one_transaction_leaves_a_tombstone(
    store: PartitionStore,
) -> None:
    state = StatusState(PartitionBatch(store))
    state.remove(OTHER)
    assert state.flush() == [] and not state.tx.changes, "removing a job never seen writes nothing"
    state.put(JobRecord(job_id=OTHER, state=S.CANCELLED, purge_at_ms=T))
    state.remove(OTHER)
    assert state.flush() == [(OTHER.encode(), None, ())]
    state.tx.commit(0)
    assert list(store.scan(b"\x01", b"\xff")) == []


@pytest.mark.parametrize(
    "record",
    [
        FULL,
        JobRecord(job_id=OTHER, state=S.SCHEDULED),
        FULL.evolve(state=S.SUCCEEDED, result='{"ok": "ünïcødé ✓"}', last_error=None,
                    progress=Progress(fraction=1.0, message=None, at_ms=T)),
        FULL.evolve(state=S.CANCELLED, cancellation=Cancellation(by=None, reason="parent failed",
                                                                 at_ms=T, worker_id=None)),
        FULL.evolve(
            state=S.FAILED_RETRYING,
            workflow_id=None,
            priority=Priority.LOW,
            last_error={"error_type": "LeaseExpired", "message": "no heartbeat"},
        ),
    ],
)
def test_status_json_is_what_encode_status_writes(record: JobRecord) -> None:
    assert record.status_json() == encode_status(record.to_status())
    assert decode_status(record.status_json()) == record.to_status()


def test_status_json_writes_only_the_fields_of_last_error() -> None:
    extra = FULL.evolve(last_error={"error_type": "E", "message": "m", "traceback": "t"})
    assert extra.status_json() == encode_status(extra.to_status())


def test_the_record_carries_every_jobs_status_field_with_its_default() -> None:
    """JobRecord is written out for mypy's sake; what it shares with JobStatus must agree."""
    lacking = [name for name in JobStatus.model_fields if name not in JobRecord._fields]
    assert lacking == [], f"JobRecord lacks the jobs.status fields {lacking}"
    for name, field in JobStatus.model_fields.items():
        if field.is_required():
            continue
        default = field.get_default(call_default_factory=True)
        held = JobRecord._field_defaults.get(name)
        assert (list(held) if isinstance(held, tuple) else held) == default, name
    blank = JobRecord(job_id=JOB, state=S.SCHEDULED, job_type="t", owner="o", updated_at_ms=T)
    assert blank.to_status() == JobStatus(job_id=JOB, state=S.SCHEDULED, job_type="t",
                                          owner="o", updated_at_ms=T)  # fmt: skip


def test_the_cache_keeps_the_records_committed_last() -> None:
    cache = RecordCache(limit=3)
    records = {job: JobRecord(job_id=job, state=S.SCHEDULED) for job in "abcd"}
    cache.committed({"a": records["a"], "b": records["b"], "c": None})
    assert ("a" in cache, "c" in cache, "d" in cache) == (True, True, False)
    assert cache["c"] is None, "a job known to have no record"
    cache.committed({"a": records["a"].evolve(state=S.QUEUED), "d": records["d"]})
    assert len(cache) == 3 and "b" not in cache, "the record committed longest ago goes first"
    assert cache["a"] == records["a"].evolve(state=S.QUEUED)


def test_records_committed_are_read_from_the_cache_and_aborted_ones_are_not(
    store: PartitionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed(store, FULL)
    cache = RecordCache()
    calls = Calls(monkeypatch)

    first = StatusState(PartitionBatch(store), cache=cache)
    assert first.get(JOB) == FULL and first.get(OTHER) is None
    first.put(FULL.evolve(epoch=T + 1))
    first.flush()
    first.tx.commit(1)
    first.committed()
    assert calls.decoded == [JOB]

    aborted = StatusState(PartitionBatch(store), cache=cache)
    assert aborted.get(JOB) == FULL.evolve(epoch=T + 1) and aborted.get(OTHER) is None
    aborted.put(FULL.evolve(epoch=T + 2))
    aborted.flush()
    aborted.tx.rollback()  # no committed(): the cache keeps what the store has

    again = StatusState(PartitionBatch(store), cache=cache)
    assert again.get(JOB) == FULL.evolve(epoch=T + 1)
    assert calls.decoded == [JOB], "the committed record is never decoded again"
    assert StatusState(PartitionBatch(store)).get(JOB) == again.get(JOB)


def test_a_run_started_and_ended_in_one_transaction_leaves_nothing_behind(
    store: PartitionStore,
) -> None:
    execution = ExecutionRequested(job_id=JOB, execution_id="x1", scheduled_at_ms=T,
                                   fired_at_ms=T, spec=JobSpec(job_type="t", owner="o",
                                                               params='{"n": 1}'))  # fmt: skip
    state = StatusState(PartitionBatch(store))
    state.put_execution(JOB, execution)
    assert state.get_execution(JOB) == execution
    state.delete_execution(JOB)
    assert state.get_execution(JOB) is None
    assert state.flush() == [] and not state.tx.changes, "no write, no tombstone"

    running = FULL.evolve(purge_at_ms=None)
    state.put(running)
    state.put_execution(JOB, execution)  # this one commits: in the record's headers
    [(key, value, headers)] = state.flush()  # type: ignore[misc]
    assert (key, value) == (JOB.encode(), running.status_json())
    assert dict(headers) == {RECORD_HEADER: running.internal_json(),
                             EXECUTION_HEADER: orjson.dumps(plain(execution))}  # fmt: skip
    state.tx.commit(0)
    later = StatusState(PartitionBatch(store))
    assert later.get_execution(JOB) == execution
    done = running.evolve(state=S.SUCCEEDED, lease_deadline_ms=None)
    later.put(done)
    later.delete_execution(JOB)
    unrun = [(JOB.encode(), done.status_json(), [(RECORD_HEADER, done.internal_json())])]
    assert later.flush() == unrun, "no run to carry any more"
    later.tx.commit(1)
    assert store.get(b"e" + JOB.encode()) is None


def test_a_stored_execution_written_as_its_decoded_dict_reads_as_its_record(
    store: PartitionStore,
) -> None:
    """``e`` entries written before records were typed: orjson's JSON of fastavro's dict."""
    old = {
        "job_id": JOB, "workflow_id": None, "execution_id": "x1", "attempt": 2, "epoch": T,
        "scheduled_at_ms": T, "fired_at_ms": T, "deadline_ms": None,
        "spec": {"job_type": "t", "owner": "o", "params": "{}", "priority": "LOW",
                 "run_at_ms": None, "cron": cron_schedule("0 * * * *"), "depends_on": [],
                 "retry": {"max_attempts": 3, "initial_backoff_ms": 1000,
                           "backoff_coefficient": 2.0, "max_backoff_ms": 300000, "jitter": 0.1,
                           "non_retryable_errors": []},
                 "timeout_ms": None, "labels": {"a": "b"}, "on_parent_failure": "CANCEL",
                 "pool": None, "deadline_ms": None, "queue_limit_ms": None, "job_keys": None},
        "idempotency_key": None, "errors": [], "parent_results": [],
    }  # fmt: skip
    tx = PartitionBatch(store)
    tx.put(b"e" + JOB.encode(), orjson.dumps(old))
    tx.commit(0)
    execution = StatusState(PartitionBatch(store)).get_execution(JOB)
    now = {**old, "resume_from": None}  # a field added since: its default
    assert isinstance(execution, ExecutionRequested) and plain(execution) == now
    assert execution.spec.priority is Priority.LOW
    assert isinstance(execution.spec.cron, CronSchedule)
    state = StatusState(PartitionBatch(store))
    state.put_execution(JOB, execution)
    state.flush()
    assert state.tx.get(b"e" + JOB.encode()) == orjson.dumps(now), "stored as before"
