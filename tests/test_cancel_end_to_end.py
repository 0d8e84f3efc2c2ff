"""Cancelling jobs that have fired, through the whole pipeline as processes (timers, status
processor, retry router, workers) and the HTTP API: a QUEUED job never starts, a RUNNING
one is stopped within 2 s, a workflow's running step too; each ends CANCELLED with who
asked and why, on jobs.status, jobs.events and in the API."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components, worker
from jobstream._pipeline.config import Settings
from jobstream._pipeline.serde import JobStatus
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import ADMIN, TOKENS, client
from tests.support.pipeline import process_env
from tests.support.reader import events_of
from tests.support.stack import APP, api_fixtures, running_stack, topics_fixture
from tests.support.waiting import wait_for

CANCEL_WITHIN_S = 30.0
"""A cancelled run stops long before its own end (600 s): the bound that holds on a loaded
machine. How soon it stops (1-2 s on a quiet one) is a figure the end-to-end tests print,
not a promise they keep beside other work."""


pipeline_topics = topics_fixture("cancel")


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The processors, a data.process worker of concurrency 1 (a second job waits behind
    the first in its buffer) and a data.async worker."""
    port = free_ports(5)  # the first of five
    parts = components(port, app=APP, job_types=(), lease_s=5)
    beat = ("--heartbeat", "1s")  # well within the lease: a run is not LOST while it runs
    parts += [worker("data.process", "sync-0", port + 3, app=APP, concurrency=1, extra=beat),
              worker("data.async", "async-0", port + 4, app=APP, concurrency=4,
                     extra=beat)]  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


api, acme = api_fixtures()


def submit(acme: httpx.Client, job_type: str = "data.process", **params: Any) -> str:
    reply = acme.post("/api/v1/jobs", json={"job_type": job_type, "params": params})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["job_id"])


def status(settings: Settings, job_id: str) -> JobStatus | None:
    return read_statuses(settings, job_id=job_id).get(job_id)


def reach(settings: Settings, job_id: str, state: str, timeout_s: float = 60) -> JobStatus:
    def reached() -> JobStatus | None:
        found = status(settings, job_id)
        return found if found is not None and found.state == state else None

    return wait_for(reached, timeout_s=timeout_s, interval_s=0.05, what=f"{job_id} {state}")


def api_state(acme: httpx.Client, job_id: str, state: str, timeout_s: float = 60) -> dict:
    def reached() -> dict | None:
        doc = acme.get(f"/api/v1/jobs/{job_id}").json()
        return doc if doc.get("state") == state else None

    return wait_for(reached, timeout_s=timeout_s, interval_s=0.05, what=f"{job_id} {state} (API)")


def kinds(settings: Settings, job_id: str) -> list[str]:
    return [e["kind"] for e in events_of(settings, job_id)]


def cli_cancel(settings: Settings, job_id: str, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "jobstream._pipeline", "cancel", job_id, *args],
                          env=process_env(settings), capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_queued_job_behind_a_busy_worker_is_cancelled_and_never_starts(
    pipeline_topics: Topics, acme: httpx.Client
) -> None:
    settings = pipeline_topics.settings
    busy = submit(acme, sleep_s=600, cancellable=True)
    reach(settings, busy, "RUNNING")
    waiting = submit(acme, sleep_s=0)
    reach(settings, waiting, "QUEUED")
    cli_cancel(settings, waiting, "--reason", "not needed after all")
    # The record waits in the worker's buffer: it is reported when its turn to start
    # comes, here once the busy run is cancelled too (with --by, from the same CLI).
    cli_cancel(settings, busy, "--by", "ops-bot")
    stopped = reach(settings, busy, "CANCELLED")
    assert stopped.cancellation is not None and stopped.cancellation.by == "ops-bot"
    done = reach(settings, waiting, "CANCELLED")
    assert done.cancellation is not None
    assert done.cancellation.by is not None and done.cancellation.by.startswith("cli:")
    assert done.cancellation.reason == "not needed after all"
    assert done.cancellation.worker_id == "sync-0"
    history = kinds(settings, waiting)
    assert "STARTED" not in history and history[-1] == "CANCELLED"


@pytest.mark.parametrize(("job_type", "params"), [
    ("data.async", {"sleep_s": 600}),
    ("data.process", {"sleep_s": 600, "cancellable": True}),
], ids=["async", "sync polling ctx.cancelled"])  # fmt: skip
def test_a_running_job_is_cancelled_long_before_its_end(
    pipeline_topics: Topics, acme: httpx.Client, job_type: str, params: dict[str, Any]
) -> None:
    settings = pipeline_topics.settings
    job_id = submit(acme, job_type, **params)
    reach(settings, job_id, "RUNNING")
    asked = time.monotonic()
    reply = acme.post(f"/api/v1/jobs/{job_id}/cancel", json={"reason": "took too long"})
    assert reply.status_code == 202, reply.text
    done = reach(settings, job_id, "CANCELLED", timeout_s=60)
    took = time.monotonic() - asked
    shown = api_state(acme, job_id, "CANCELLED", timeout_s=30)
    shown_after = time.monotonic() - asked
    print(f"\n{job_type}: CANCELLED on jobs.status {took:.3f} s, in the API {shown_after:.3f} s "
          "after the request")  # fmt: skip
    assert took < CANCEL_WITHIN_S, f"CANCELLED {took:.2f} s after the request"
    assert done.cancellation is not None
    assert (done.cancellation.by, done.cancellation.reason) == ("api:acme", "took too long")
    assert shown["cancellation"]["by"] == "api:acme"
    ended = [e for e in events_of(settings, job_id) if e["kind"] == "CANCELLED"]
    assert len(ended) == 1 and ended[0]["execution_id"] is not None
    assert (ended[0]["requested_by"], ended[0]["detail"]) == ("api:acme", "took too long")
    runs = acme.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    assert [(r["outcome"], r["detail"]) for r in runs] == [("CANCELLED", "took too long")]
    assert not [e for e in events_of(settings, job_id) if e["kind"] in ("SUCCEEDED", "FAILED")]


def test_a_workflow_with_a_running_step_is_cancelled(
    pipeline_topics: Topics, acme: httpx.Client, api: ApiServer
) -> None:
    settings = pipeline_topics.settings
    steps = [
        {"name": "extract", "job_type": "data.async", "params": {"sleep_s": 600}},
        {"name": "load", "job_type": "data.process", "depends_on": ["extract"]},
    ]
    reply = acme.post("/api/v1/workflows", json={"steps": steps})
    assert reply.status_code == 201, reply.text
    workflow_id, ids = reply.json()["workflow_id"], reply.json()["job_ids"]
    reach(settings, ids["extract"], "RUNNING")
    api_state(acme, ids["load"], "BLOCKED")
    cancel = acme.post(f"/api/v1/workflows/{workflow_id}/cancel", json={"reason": "rerun"})
    assert cancel.status_code == 202, cancel.text
    assert sorted(cancel.json()["jobs"]) == sorted(ids.values())
    running = reach(settings, ids["extract"], "CANCELLED", timeout_s=10)
    assert running.cancellation is not None and running.cancellation.worker_id == "async-0"
    assert running.cancellation.by == "api:acme"
    waiting = reach(settings, ids["load"], "CANCELLED")
    assert waiting.cancellation is not None and waiting.cancellation.reason == "rerun"
    assert "STARTED" not in kinds(settings, ids["load"])
    # every job of it has ended now: nothing left to cancel
    api_state(acme, ids["extract"], "CANCELLED")
    api_state(acme, ids["load"], "CANCELLED")
    again = acme.post(f"/api/v1/workflows/{workflow_id}/cancel")
    assert again.status_code == 409, again.text
    with client(api, TOKENS["bolt"]) as bolt:
        assert bolt.post(f"/api/v1/workflows/{workflow_id}/cancel").status_code == 404


def test_an_ended_job_still_refuses_a_cancel(pipeline_topics: Topics, acme: httpx.Client,
                                             api: ApiServer) -> None:  # fmt: skip
    job_id = submit(acme, sleep_s=0)
    api_state(acme, job_id, "SUCCEEDED")
    assert acme.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 409
    with client(api, ADMIN) as admin:
        assert admin.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 409
