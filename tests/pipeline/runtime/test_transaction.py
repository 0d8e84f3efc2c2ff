"""The open transaction: what it holds, and what a revoked partition takes away."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._pipeline.runtime import Output
from jobstream._pipeline.runtime.transaction import OpenTransaction
from jobstream._pipeline.serde import Event, JobState
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.status.state import JobRecord, StatusState

S = JobState


def status(job: str, state: JobState) -> Output:
    return Output("jobs.status", job.encode(), JobRecord(job_id=job, state=state).status_json())


def lost(job: str, partition: int) -> Output:
    return Output("jobs.events", job.encode(), Event("JobLifecycle", {"kind": "LOST",
                "job_id": job}), partition=partition)  # fmt: skip


@pytest.fixture
def open_tx(tmp_path: Path) -> OpenTransaction:
    tx = OpenTransaction()
    for p in (0, 1):
        tx.open(p, StatusState(PartitionBatch(PartitionStore(tmp_path / str(p))), p))
    return tx


def test_every_output_is_written_in_the_order_decided(open_tx: OpenTransaction) -> None:
    assert not open_tx.pending
    open_tx.fold(0, [status("a", S.SCHEDULED), status("b", S.SCHEDULED)], consumed=2)
    open_tx.fold(0, [status("a", S.QUEUED), lost("c", 0)], consumed=1)
    open_tx.fold(0, [status("a", S.RUNNING)], consumed=1)
    assert open_tx.pending and open_tx.consumed == 4 and open_tx.size == 4 + 5
    assert [e.key for e in open_tx.emits()] == [b"a", b"b", b"a", b"c", b"a"]


def test_a_transaction_of_input_offsets_only_is_pending(open_tx: OpenTransaction) -> None:
    open_tx.fold(1, [], consumed=1)  # a malformed record: its offset still moves on
    assert open_tx.pending


def test_a_revoked_partition_drops_its_share(open_tx: OpenTransaction) -> None:
    state = open_tx.state(0)
    assert state is not None
    state.put(JobRecord(job_id="a", state=S.SCHEDULED))
    state.tx.put(b"e" + b"a", b"{}")
    open_tx.fold(0, [status("a", S.SCHEDULED)], consumed=1)
    open_tx.fold(1, [status("b", S.SCHEDULED)], consumed=1)
    open_tx.drop([0, 7])
    assert open_tx.state(0) is None and state.tx.changes == {}
    assert [e.key for e in open_tx.emits()] == [b"b"] and open_tx.consumed == 1
    open_tx.rollback()
    assert not open_tx.pending and list(open_tx.emits()) == []


def test_partitions_outputs_are_interleaved_each_in_its_own_order(
    open_tx: OpenTransaction,
) -> None:
    open_tx.fold(0, [lost(job, 0) for job in ("a1", "a2", "a3", "a4")])
    open_tx.fold(1, [lost(job, 1) for job in ("b1", "b2")])
    assert [e.key for e in open_tx.emits()] == [b"a1", b"b1", b"a2", b"b2", b"a3", b"a4"]


def test_an_urgent_output_makes_its_transaction_urgent_until_its_partition_goes(
    open_tx: OpenTransaction,
) -> None:
    open_tx.fold(0, [status("a", S.SUCCEEDED), lost("b", 0)], consumed=1)
    assert not open_tx.urgent, "statuses and lifecycle events wait for the interval"
    ended = Output("jobs.intake", b"wf", Event("StepEnded", {"job_id": "a"}), urgent=True)
    open_tx.fold(1, [ended], consumed=1)
    assert open_tx.urgent
    open_tx.drop([1])
    assert not open_tx.urgent, "a revoked partition takes its urgent output away"
