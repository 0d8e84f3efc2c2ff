"""``jobstream worker --isolation process`` in the whole pipeline, on the real broker: a
handler that kills its own process fails its jobs alone, and they dead-letter after their
attempts while the worker and the other jobs of the type go on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.dlq.reader import DlqFilter, DlqReader
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest, RetryPolicy
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.topics import Topics
from tests.support.reader import events_of
from tests.support.stack import running_stack, topics_fixture
from tests.support.stack import settled as stack_settled

APP = "tests.support.isolation_app"
OWNER = "isolation"
WORKER = "worker-isolated"


pipeline_topics = topics_fixture("iso")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Timers, status processor, retry router, and one worker of ``iso.work`` whose one
    slot (``--concurrency 1``) every job must get back to run at all."""
    base = free_ports(4)
    parts = [*components(base, app=APP, job_types=(), lease_s=3),
             worker("iso.work", "isolated", base + 3, app=APP, concurrency=1,
                    extra=("--isolation", "process", "--heartbeat", "0.5s"))]  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


def settled(settings: Settings, ids: dict[str, str], states: dict[str, set[str]],
            timeout_s: float = 180) -> dict[str, JobStatus]:  # fmt: skip
    return stack_settled(settings, OWNER, ids, states, timeout_s)


def job(retry: RetryPolicy | None = None, timeout_ms: int | None = None,
        **params: Any) -> JobRequest:  # fmt: skip
    return JobRequest(job_type="iso.work", owner=OWNER, params=params, retry=retry,
                      timeout_ms=timeout_ms)  # fmt: skip




def test_a_handler_that_kills_its_process_dead_letters_alone(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    _, process = stack.processes[WORKER]
    requests = {
        "crashes": job(RetryPolicy(max_attempts=2, initial_backoff_ms=200, jitter=0),
                       signal="SIGKILL"),
        **{f"ordinary {i}": job(n=i) for i in range(6)},
    }  # fmt: skip
    with JobClient(settings) as client:
        # The hung run takes the only slot first: every other job needs it back to run.
        ids = {"hangs": client.submit(job(RetryPolicy(max_attempts=1), timeout_ms=3000,
                                          sleep_s=600))}  # fmt: skip
        settled(settings, ids, {"hangs": {"RUNNING", "DEAD_LETTERED"}})
        ids |= dict(zip(requests, client.submit_many(requests.values()), strict=True))
    expected = {label: {"SUCCEEDED" if label.startswith("ordinary") else "DEAD_LETTERED"}
                for label in ids}  # fmt: skip
    done = settled(settings, ids, expected)

    crashed = done["crashes"]
    assert crashed.attempt == 2 and crashed.last_error is not None
    assert crashed.last_error.error_type == "WorkerCrashed"
    assert crashed.last_error.message.endswith("was killed by signal SIGKILL")
    failures = [(e["attempt"], e["error"]["error_type"], e["error"]["retryable"])
                for e in events_of(settings, ids["crashes"]) if e["kind"] == "FAILED"]  # fmt: skip
    assert failures == [(1, "WorkerCrashed", True), (2, "WorkerCrashed", True)]
    with DlqReader(settings) as reader:
        dead = {r.job_id: r for r in reader.read(DlqFilter(owner=OWNER))}
    assert dead[ids["crashes"]].data["reason"] == "exhausted"

    # The hung run was killed at its timeout: the worker's only slot came back for the rest.
    assert done["hangs"].last_error is not None and done["hangs"].last_error.error_type == "Timeout"
    pids = {orjson.loads(done[f"ordinary {i}"].result or "{}")["pid"] for i in range(6)}
    assert process.pid not in pids, "handlers ran in children, not in the worker"
    assert process.poll() is None and stack.healthy(WORKER), "the worker stayed up"


def test_a_running_job_cancelled_has_its_child_terminated_and_the_slot_back(
    stack: Stack, pipeline_topics: Topics
) -> None:
    settings = pipeline_topics.settings
    with JobClient(settings) as client:
        ids = {"cancelled": client.submit(job(sleep_s=600))}
        settled(settings, ids, {"cancelled": {"RUNNING"}})
        asked = time.monotonic()
        client.cancel(ids["cancelled"], reason="not needed", requested_by="iso-test")
        cancelled = settled(settings, ids, {"cancelled": {"CANCELLED"}}, timeout_s=90)
        took_s = time.monotonic() - asked
        ids["after"] = client.submit(job(n=99))
    assert cancelled["cancelled"].cancellation is not None
    assert cancelled["cancelled"].cancellation.by == "iso-test"
    # SIGTERM ends the run in its child at once, long before its 600 s sleep; the status
    # follows the cancel's path (timers, jobs.control, worker, status processor), a few
    # seconds on a quiet machine and more on a loaded one.
    assert took_s < 60, f"CANCELLED {took_s:.1f} s after the cancel"
    settled(settings, {"after": ids["after"]}, {"after": {"SUCCEEDED"}}, timeout_s=60)
