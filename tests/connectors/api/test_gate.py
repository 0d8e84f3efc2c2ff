"""The quota gate on a clock the test moves and real views (RocksDB): what it admits,
what it refuses and with which answer, and what it frees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._connectors.api.auth import Principal
from jobstream._connectors.api.errors import ApiError
from jobstream._connectors.api.gate import RECENT_JOBS_S, QuotaGate, Submission, submissions_of
from jobstream._connectors.views import ViewStore
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.quotas.model import Quota
from jobstream._pipeline.quotas.topic import QuotaBoard
from jobstream._pipeline.scheduling import new_job_id
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.workflows.commands import workflow_event
from tests.connectors.views.records import as_submitted, status, submitted

DEFAULTS = Quota(job_types=3, submit_rate=10.0, submit_burst=20, pending_jobs=100, streams=2)
ACME = Principal("acme", token="acme-token")
ACME_2 = Principal("acme", token="acme-other")
ADMIN = Principal(None, admin=True, token="root")
T0 = 1_767_225_600_000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ViewStore]:
    opened = ViewStore(tmp_path / "views")
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(clock: Clock) -> QuotaGate:
    return QuotaGate(DEFAULTS, QuotaBoard(), clock=clock)


def jobs(count: int, job_type: str = "data.process", owner: str = "acme") -> list[Submission]:
    return [Submission(owner, job_type, f"jobs[{i}].spec.job_type", new_job_id(T0))
            for i in range(count)]  # fmt: skip


def refusal(call: object, *args: object) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.status == 429
    return caught.value


def fold(store: ViewStore, *records: object) -> None:
    batch = store.batch()
    for record in records:
        if isinstance(record, JobStatus):
            batch.status(record)
        else:
            batch.submitted(as_submitted(record))
    batch.commit()


def test_a_token_submits_its_burst_then_its_rate_with_a_retry_after(
        gate: QuotaGate, store: ViewStore, clock: Clock) -> None:  # fmt: skip
    gate.admit(ACME, jobs(15), store)
    refused = refusal(gate.admit, ACME, jobs(6), store)
    assert refused.quota == "submit_rate" and refused.headers == {"Retry-After": "1"}
    assert "'acme' may submit 10 jobs a second per token (at once: 20)" in refused.detail
    gate.admit(ACME_2, jobs(20), store)  # another token of the owner has its own bucket
    clock.now += 0.1
    gate.admit(ACME, jobs(6), store)
    refused = refusal(gate.admit, ACME, jobs(15), store)
    assert refused.headers == {"Retry-After": "2"}  # 15 tokens missing at 10 a second


def test_a_batch_over_the_burst_passes_once_the_bucket_is_full(
        gate: QuotaGate, store: ViewStore, clock: Clock) -> None:  # fmt: skip
    gate.admit(ACME, jobs(1), store)
    assert refusal(gate.admit, ACME, jobs(50), store).headers == {"Retry-After": "1"}
    clock.now += 0.1
    gate.admit(ACME, jobs(50), store)
    # 30 tokens owed at 10 a second: one job waits 3.1 s, 25 (a full bucket) 5 s
    assert refusal(gate.admit, ACME, jobs(1), store).headers == {"Retry-After": "4"}
    assert refusal(gate.admit, ACME, jobs(25), store).headers == {"Retry-After": "5"}


def test_an_admin_acts_under_the_owners_quotas(gate: QuotaGate, store: ViewStore) -> None:
    gate.admit(ADMIN, jobs(20, owner="bolt"), store)
    assert refusal(gate.admit, ADMIN, jobs(1, owner="bolt"), store).quota == "submit_rate"
    gate.admit(ADMIN, jobs(20, owner="acme"), store)  # a bucket per owner it acts for


def test_a_workflow_has_no_token_rate_but_its_steps_count(
        gate: QuotaGate, store: ViewStore) -> None:  # fmt: skip
    steps = [{"name": f"s{n}", "job_type": f"t{n}"} for n in range(4)]
    event = workflow_event("acme", steps, now_ms=T0)
    refused = refusal(gate.admit, None, list(submissions_of([event])), store)
    assert (refused.quota, refused.field) == ("job_types", "steps.3.spec.job_type")
    gate.admit(None, list(submissions_of([event]))[:3] * 30, store)  # 90 jobs: over the burst


def test_job_types_count_the_views_and_what_was_just_accepted(
        gate: QuotaGate, store: ViewStore, clock: Clock) -> None:  # fmt: skip
    fold(store, submitted("acme", "a", at_ms=T0), submitted("bolt", "z", at_ms=T0))
    gate.admit(ACME, jobs(1, "b"), store)
    clock.now += 1
    single = submissions_of([JobRequest(owner="acme", job_type="d").to_event(T0)])
    gate.admit(ACME, [*jobs(1, "c"), *jobs(2, "a")], store)
    refused = refusal(gate.admit, ACME, list(single), store)
    assert (refused.quota, refused.field) == ("job_types", "spec.job_type")
    assert refused.detail == ("quota job_types: owner 'acme' may have jobs of at most 3 job "
                              "types and has 3; 'd' would be one more")  # fmt: skip
    gate.admit(ACME, jobs(3, "b"), store)  # a type held is no new one


def test_pending_jobs_count_those_not_ended(gate: QuotaGate, store: ViewStore,
                                           clock: Clock) -> None:  # fmt: skip
    records = [submitted("acme", at_ms=T0 + n) for n in range(100)]
    fold(store, *records)
    refused = refusal(gate.admit, ACME, jobs(1), store)
    assert refused.quota == "pending_jobs" and refused.field is None
    assert refused.detail == ("quota pending_jobs: owner 'acme' may hold at most 100 jobs not "
                              "ended and holds 100; this request brings 1")  # fmt: skip
    ended = ("SUCCEEDED", "CANCELLED", "DEAD_LETTERED", "RUNNING")
    fold(store, *(status(record, state, at_ms=T0 + 1000)
                  for record, state in zip(records[:4], ended, strict=True)))  # fmt: skip
    gate.admit(ACME, jobs(3), store)
    refusal(gate.admit, ACME, jobs(1), store)
    assert gate.usage("acme", store)["pending_jobs"] == {"used": 100, "limit": 100}


def test_a_request_refused_counts_nothing_and_one_not_sent_is_taken_back(
        gate: QuotaGate, store: ViewStore) -> None:  # fmt: skip
    refusal(gate.admit, ACME, [*jobs(1, "a"), *jobs(1, "b"), *jobs(1, "c"), *jobs(1, "d")],
            store)  # fmt: skip
    assert gate.usage("acme", store, ACME.token)["submit_rate"]["available"] == 20
    reservation = gate.admit(ACME, jobs(2, "a") + jobs(1, "b"), store)
    assert gate.held("acme", store).pending_jobs == 3
    gate.release(reservation)
    assert gate.held("acme", store).job_types == frozenset()
    assert gate.held("acme", store).pending_jobs == 0


def test_an_override_replaces_the_defaults_it_names(gate: QuotaGate, store: ViewStore,
                                                   clock: Clock) -> None:  # fmt: skip
    gate.board.set("acme", Quota(job_types=1, submit_burst=2))
    assert refusal(gate.admit, ACME, jobs(1, "a") + jobs(1, "b"), store).quota == "job_types"
    gate.admit(ACME, jobs(1, "a"), store)
    assert refusal(gate.admit, ACME, jobs(2, "a"), store).quota == "submit_rate"
    assert gate.quota("acme").pending_jobs == 100
    gate.board.clear("acme")
    clock.now += 0.1  # the bucket keeps its one token at its new size, and earns one more
    gate.admit(ACME, jobs(1, "a") + jobs(1, "b"), store)


def test_streams_count_per_token_and_a_freed_slot_opens_again(
        gate: QuotaGate, store: ViewStore) -> None:  # fmt: skip
    first, _ = gate.open_stream(ACME), gate.open_stream(ACME)
    refused = refusal(gate.open_stream, ACME)
    assert refused.quota == "streams" and "at most 2 live streams" in refused.detail
    other = gate.open_stream(ACME_2)
    assert gate.usage("acme", store, ACME.token)["streams"] == {"used": 2, "limit": 2}
    assert gate.usage("acme", store)["streams"] == {"used": 3, "limit": 2}
    first()
    first()  # freeing twice frees one slot
    gate.open_stream(ACME)
    refusal(gate.open_stream, ACME)
    other()
    gate.open_stream(ADMIN)
    gate.open_stream(ADMIN)
    refusal(gate.open_stream, ADMIN)  # an admin token has the default quota


def test_jobs_just_accepted_count_until_the_views_hold_them(
        gate: QuotaGate, store: ViewStore, clock: Clock) -> None:  # fmt: skip
    events = [JobRequest(owner="acme", job_type="data.process").to_event(T0) for _ in range(3)]
    gate.admit(ACME, list(submissions_of(events, batch=True)), store)
    assert gate.held("acme", store).pending_jobs == 3
    fold(store, events[1].data, events[2].data)
    assert gate.held("acme", store).pending_jobs == 5  # the first not folded: erring high
    fold(store, events[0].data)
    assert gate.held("acme", store).pending_jobs == 3  # once each: the views hold them
    gate.admit(ACME, jobs(5), store)  # never folded: as if the views had stalled
    assert gate.held("acme", store).pending_jobs == 8
    clock.now += RECENT_JOBS_S + 1
    assert gate.held("acme", store).pending_jobs == 3
