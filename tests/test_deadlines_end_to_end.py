"""Deadlines and queue limits through the whole pipeline as processes (timers, status
processor, retry router, a data.process worker) and the HTTP API, on the real broker: a
job whose type has no worker ends EXPIRED at its queue limit, naming its type and pool;
a job whose retry would start past its deadline starts no new attempt and ends EXPIRED."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import httpx

from jobstream._ops.stack import Stack
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.topics import Topics
from tests.support.reader import events_of
from tests.support.stack import api_fixtures, pipeline_fixtures, submit_over_api
from tests.support.waiting import wait_for

pipeline_topics, stack = pipeline_fixtures("deadlines", lease_s=5)
api, acme = api_fixtures()


def expired(client: httpx.Client, job_id: str, timeout_s: float = 60) -> dict[str, Any]:
    """The API's document of ``job_id`` once it is EXPIRED."""

    def read() -> dict[str, Any] | None:
        doc: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        return doc if doc.get("state") == "EXPIRED" else None

    return wait_for(read, timeout_s=timeout_s, interval_s=0.2, what=f"{job_id} EXPIRED")


def test_a_job_whose_type_has_no_worker_ends_expired_at_its_queue_limit(
    stack: Stack, pipeline_topics: Topics, acme: httpx.Client
) -> None:
    refused = acme.post("/api/v1/jobs", json={"job_type": "data.nobody", "deadline": "soon"})
    assert 400 <= refused.status_code < 500
    assert refused.json()["field"] == "spec.deadline_ms"
    submitted = time.monotonic()
    job_id = submit_over_api(acme, {"job_type": "data.nobody", "pool": "gpu",
                                    "queue_limit_ms": 2_000, "deadline": "PT10M"})  # fmt: skip
    doc = expired(acme, job_id)
    waited = time.monotonic() - submitted
    print(f"EXPIRED {waited:.1f} s after the submission (queue limit 2 s)")
    assert waited >= 2.0, "not before its queue limit"
    assert doc["queue_limit_ms"] == 2_000 and doc["deadline_ms"] is not None
    assert doc["last_error"]["error_type"] == "QueueLimitExceeded"
    assert "no worker of type data.nobody (pool gpu)" in doc["last_error"]["message"]
    kinds = [e["kind"] for e in events_of(pipeline_topics.settings, job_id)]
    assert kinds[-2:] == ["FIRED", "EXPIRED"] and "STARTED" not in kinds


def test_a_job_past_its_deadline_starts_no_new_attempt(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    request = JobRequest(job_type="data.process", owner="deadlines",
                         params={"fail_until_attempt": 3}, deadline=timedelta(seconds=20),
                         retry=RetryPolicy(initial_backoff_ms=60_000, jitter=0))  # fmt: skip
    with JobClient(settings) as client:
        job_id = client.submit(request)

    def ended() -> list[str]:
        kinds = [e["kind"] for e in events_of(settings, job_id)]
        return kinds if "EXPIRED" in kinds else []

    kinds = wait_for(ended, timeout_s=60, interval_s=0.3, what=f"{job_id} EXPIRED")
    assert kinds.count("STARTED") == 1 and "RETRY_SCHEDULED" not in kinds
    assert kinds[kinds.index("FAILED") + 1 :] == ["EXPIRED"]
    [event] = [e for e in events_of(settings, job_id) if e["kind"] == "EXPIRED"]
    assert event["error"]["error_type"] == "DeadlineExceeded"
    assert "attempt 1 failed (tests.support.e2e_app.Transient" in event["error"]["message"]
