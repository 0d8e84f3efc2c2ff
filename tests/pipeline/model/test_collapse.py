"""Debounce and singleton rules, pure: windows, whose params a run takes, singleton verdicts,
and where a submission's record is keyed."""

from __future__ import annotations

from typing import Any

import pytest

from jobstream._pipeline.model import collapse
from jobstream._pipeline.model.collapse import Verdict
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.model.labels import SINGLETON_LABEL
from jobstream._pipeline.model.records import JobKeys, JobSubmitted
from jobstream._pipeline.partitioning import java_partition, partition_key

pytestmark = pytest.mark.fast

T0 = 1_798_000_000_000


def job(keys: dict[str, Any] | None = None, *, n: int = 0, **fields: Any) -> JobSubmitted:
    record: JobSubmitted = JobRequest(job_type="recompute", owner="acme", params={"n": n},
                                      keys=keys, **fields).to_event(T0).data  # fmt: skip
    return record


def debounce_keys(window_ms: int = 1000, max_delay_ms: int | None = None) -> JobKeys:
    return JobKeys(debounce_key="c-42", debounce_window_ms=window_ms, debounce_max_ms=max_delay_ms)


def test_a_window_closes_one_window_after_the_latest_submission() -> None:
    keys = debounce_keys(1000, 5000)
    assert collapse.window_close_ms(keys, opened_ms=T0, now_ms=T0) == T0 + 1000
    assert collapse.window_close_ms(keys, opened_ms=T0, now_ms=T0 + 900) == T0 + 1900


def test_a_steady_stream_still_closes_at_the_maximum_delay() -> None:
    keys = debounce_keys(1000, 2500)
    assert collapse.window_close_ms(keys, opened_ms=T0, now_ms=T0 + 2000) == T0 + 2500
    ten_windows = debounce_keys(1000)
    assert collapse.window_close_ms(ten_windows, opened_ms=T0, now_ms=T0 + 9500) == T0 + 10_000


def test_the_run_takes_the_last_params_or_the_first_as_chosen() -> None:
    last = {"debounce": {"key": "c", "window_ms": 1000}}
    first = {"debounce": {"key": "c", "window_ms": 1000, "keep": "FIRST"}}
    assert collapse.kept(job(last, n=1), job(last, n=2)).spec.params == '{"n":2}'
    assert collapse.kept(job(first, n=1), job(first, n=2)).spec.params == '{"n":1}'


def test_a_run_has_a_derived_id_and_keeps_every_key_but_its_debounce_key() -> None:
    submission = job({"debounce": {"key": "c", "window_ms": 1000},
                      "rate": {"key": "api", "rate": "5/s"}}, n=7)  # fmt: skip
    run_id, idempotency_key = collapse.debounce_run_id("acme", submission.job_id)
    assert (run_id, idempotency_key) == collapse.debounce_run_id("acme", submission.job_id)
    assert run_id != collapse.debounce_run_id("other", submission.job_id)[0], "per owner"
    run = collapse.run_of(submission, run_id=run_id, idempotency_key=idempotency_key,
                          now_ms=T0 + 1000)  # fmt: skip
    assert run.job_id == run_id and run.spec.params == submission.spec.params
    assert run.spec.job_keys is not None
    assert run.spec.job_keys.debounce_key is None and run.spec.job_keys.rate_key == "api"
    assert collapse.collapse_of(run) is None, "not debounced again"
    bare = collapse.run_of(job({"debounce": {"key": "c", "window_ms": 1000}}), run_id=run_id,
                           idempotency_key=idempotency_key, now_ms=T0)  # fmt: skip
    assert bare.spec.job_keys is None


def test_singleton_verdicts() -> None:
    drop = job({"singleton": {"key": "s"}})
    replace = job({"singleton": {"key": "s", "mode": "REPLACE"}})
    assert collapse.singleton_verdict(drop, current=None, waiting=None) is Verdict.RUN
    assert collapse.singleton_verdict(drop, current="A", waiting=None) is Verdict.DROP
    assert collapse.singleton_verdict(replace, current="A", waiting="B") is Verdict.WAIT
    assert collapse.singleton_verdict(replace, current=replace.job_id,
                                      waiting=None) is Verdict.REPEAT  # fmt: skip
    assert collapse.singleton_verdict(replace, current="A",
                                      waiting=replace.job_id) is Verdict.REPEAT  # fmt: skip


def test_a_submission_is_keyed_where_its_key_meets() -> None:
    debounced = job({"debounce": {"key": "c-42", "window_ms": 1000}})
    assert collapse.intake_key(debounced) == b"debounce:acme\x00c-42"
    assert collapse.meeting_partition(debounced, 6) == java_partition(b"debounce:acme\x00c-42", 6)
    single = job({"singleton": {"key": "c-42"}})
    assert collapse.intake_key(single) == b"singleton:acme\x00c-42"
    taken = collapse.admitted(single, "c-42")
    assert taken.spec.labels[SINGLETON_LABEL] == "c-42"
    assert collapse.intake_key(taken) == partition_key(taken.job_id, None), "its own now"
    plain = job({"concurrency": {"key": "c-42"}})
    assert collapse.intake_key(plain) == partition_key(plain.job_id, None)
