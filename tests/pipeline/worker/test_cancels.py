"""The cancels a worker keeps: which executions they cover, and their expiry."""

from __future__ import annotations

import pytest

from jobstream._pipeline.model.cancel import CancelRequest
from jobstream._pipeline.model.records import ExecutionRequested, JobSpec
from jobstream._pipeline.worker.cancels import CancelSet

T0 = 1_800_000_000_000
TTL = 60_000


def request(job_id: str = "job-a", *, at: int = T0, up_to: int = T0,
            **fields: str) -> CancelRequest:  # fmt: skip
    return CancelRequest(job_id=job_id, requested_at_ms=at, up_to_epoch=up_to, **fields)


def execution(job_id: str = "job-a", *, epoch: int = T0 - 1000) -> ExecutionRequested:
    return ExecutionRequested(job_id=job_id, execution_id=f"{job_id}-1-{epoch}", epoch=epoch,
                              scheduled_at_ms=epoch, fired_at_ms=epoch,
                              spec=JobSpec(job_type="data.process", owner="tests"))  # fmt: skip


def test_a_cancel_covers_the_executions_fired_up_to_it_and_no_later_one() -> None:
    cancels = CancelSet(TTL)
    assert cancels.add(request(up_to=T0), T0)
    assert cancels.match(execution(epoch=T0 - 1)) is not None
    assert cancels.match(execution(epoch=T0)) is not None
    assert cancels.match(execution(epoch=T0 + 1)) is None  # fired after: a redrive, say
    assert cancels.match(execution("job-b")) is None


def test_up_to_epoch_zero_covers_every_execution() -> None:
    cancels = CancelSet(TTL)
    cancels.add(request(up_to=0), T0)
    assert cancels.match(execution(epoch=T0 + 10**9)) is not None


def test_the_cancel_that_covers_more_is_kept() -> None:
    cancels = CancelSet(TTL)
    assert cancels.add(request(up_to=T0, reason="first"), T0)
    assert not cancels.add(request(up_to=T0 - 5, reason="older"), T0)
    assert cancels.add(request(up_to=T0 + 5, reason="later"), T0)
    found = cancels.match(execution(epoch=T0 + 5))
    assert found is not None and found.reason == "later"
    assert len(cancels) == 1


def test_cancels_expire_after_the_ttl_oldest_first() -> None:
    cancels = CancelSet(TTL)
    cancels.add(request("job-a", at=T0), T0)
    cancels.add(request("job-b", at=T0 + 10_000), T0 + 10_000)
    assert cancels.expire(T0 + TTL - 1) == 0
    assert cancels.expire(T0 + TTL) == 1
    assert cancels.match(execution("job-a")) is None
    assert cancels.match(execution("job-b")) is not None
    assert cancels.expire(T0 + 10_000 + TTL) == 1
    assert len(cancels) == 0


def test_a_cancel_already_expired_when_read_is_not_kept() -> None:
    cancels = CancelSet(TTL)
    assert not cancels.add(request(at=T0), T0 + TTL)
    assert len(cancels) == 0


def test_the_set_is_bounded_the_oldest_dropped_first() -> None:
    cancels = CancelSet(TTL, limit=2)
    for name in ("job-a", "job-b", "job-c"):
        cancels.add(request(name), T0)
    assert [r.job_id for r in cancels] == ["job-b", "job-c"]


def test_a_bad_ttl_or_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        CancelSet(0)
    with pytest.raises(ValueError):
        CancelSet(TTL, limit=0)


def test_a_request_round_trips_through_its_record() -> None:
    sent = request(workflow_id="wf-1", requested_by="cli:ann@box", reason="wrong month")
    assert CancelRequest.from_record(sent.to_event().data) == sent
    assert sent.detail == "wrong month"
    assert request().detail == "cancelled"
