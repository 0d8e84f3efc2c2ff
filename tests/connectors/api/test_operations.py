"""Executions, the commands a job was given, workers, dead letters and redrive through the
API, and the CLI on top of it, against the real service and broker."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import TOKENS
from tests.connectors.views.records import event
from tests.pipeline.dlq.test_dlq import dead_lettered
from tests.pipeline.retry.events import error_info
from tests.support.pipeline import SERIALIZE, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for


def _steps(settings: Settings, topics: Topics, acme: httpx.Client) -> str:
    """A job submitted through the API, then its lifecycle as a worker reports it."""
    job_id = acme.post("/api/v1/jobs", json={"job_type": "data.process"}).json()["job_id"]
    at = now_ms()
    record = {"job_id": job_id, "submitted_at_ms": at,
              "spec": {"job_type": "data.process", "owner": "acme"}}  # fmt: skip
    error = error_info(1, "ValueError", retryable=True)
    produce(settings, topics.events, [
        Event("JobLifecycle", event(record, "FIRED", at_ms=at + 1, due_ms=at)),
        Event("JobLifecycle", event(record, "STARTED", at_ms=at + 2, due_ms=at, worker_id="w-1")),
        Event("JobLifecycle", event(record, "FAILED", at_ms=at + 3, due_ms=at, worker_id="w-1",
                                    error=error)),
        Event("JobLifecycle", event(record, "STARTED", at_ms=at + 9, attempt=2, due_ms=at + 8,
                                    worker_id="w-2")),
    ])  # fmt: skip
    beat = {"worker_id": "w-2", "host": "h", "pid": 7, "job_types": ["data.process"],
            "capacity": 4, "running": [f"{job_id}:{at + 8}:2"], "state": "RUNNING",
            "started_at_ms": at, "at_ms": now_ms()}  # fmt: skip
    producer = clients.producer(settings)
    producer.produce(topics.workers, SERIALIZE(Event("WorkerHeartbeat", beat)), b"w-2")
    assert producer.flush(30) == 0
    return job_id


def test_executions_and_workers(settings: Settings, topics: Topics, acme: httpx.Client,
                                bolt: httpx.Client, server: ApiServer) -> None:  # fmt: skip
    job_id = _steps(settings, topics, acme)

    def history() -> list[dict]:
        return acme.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]

    wait_for(lambda: len(history()) == 2, what="two executions")
    first, second = history()
    assert (first["attempt"], first["worker_id"], first["outcome"]) == (1, "w-1", "FAILED")
    assert first["error"]["error_type"] == "ValueError" and first["ended_at_ms"] is not None
    assert (second["attempt"], second["worker_id"], second["outcome"]) == (2, "w-2", "RUNNING")
    found = wait_for(lambda: acme.get("/api/v1/workers").json()["workers"], what="a worker")
    assert [(w["worker_id"], w["running"], w["stale"]) for w in found] == [("w-2", 1, False)]
    # the CLI, through the API, at 80 columns
    env = {**os.environ, "JOBSTREAM_API_URL": server.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
           "COLUMNS": "80"}  # fmt: skip
    for args, expected in ((["history", job_id], "ValueError"), (["workers"], "w-2"),
                           (["jobs", "list"], job_id)):  # fmt: skip
        result = subprocess.run([sys.executable, "-m", "jobstream", *args], env=env, text=True,
                                capture_output=True, timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert expected in result.stdout, result.stdout
        assert max(len(line) for line in result.stdout.splitlines()) <= 80, result.stdout
    refused = subprocess.run([sys.executable, "-m", "jobstream", "history", job_id], text=True,
                             env={**env, "JOBSTREAM_API_TOKEN": TOKENS["bolt"]},
                             capture_output=True, timeout=60)  # fmt: skip
    assert refused.returncode == 6 and "404" in refused.stderr


def test_a_job_shows_the_commands_people_gave_it(settings: Settings, topics: Topics,
                                                 acme: httpx.Client, bolt: httpx.Client,
                                                 server: ApiServer) -> None:  # fmt: skip
    """Every JobLifecycle with ``requested_by`` is a command, shown once (a replay repeats
    it) in GET /api/v1/jobs/{id} and ``jobstream history``; other events are not."""
    job_id = acme.post("/api/v1/jobs", json={"job_type": "data.process",
                                             "cron": "0 * * * *"}).json()["job_id"]  # fmt: skip
    at = now_ms()
    record = {"job_id": job_id, "submitted_at_ms": at,
              "spec": {"job_type": "data.process", "owner": "acme"}}  # fmt: skip
    pause = event(record, "PAUSED", at_ms=at + 1, execution_id=None, requested_by="api:acme",
                  detail="quiet hours")  # fmt: skip
    paused = Event("JobLifecycle", pause)
    produce(settings, topics.events, [
        Event("JobLifecycle", event(record, "FIRED", at_ms=at, due_ms=at)),  # its schedule's
        paused, paused,
        Event("JobLifecycle", event(record, "RESUMED", at_ms=at + 2, execution_id=None,
                                    requested_by="api:admin:ops-alice", detail="resumed")),
        Event("JobLifecycle", event(record, "FIRED", at_ms=at + 3, due_ms=at + 3,
                                    requested_by="cli:alice", detail="run now")),
    ])  # fmt: skip

    def commands() -> list[dict]:
        return acme.get(f"/api/v1/jobs/{job_id}").json()["commands"]

    wait_for(lambda: len(commands()) == 3, what="three commands")
    assert commands() == [
        {"kind": "PAUSED", "at_ms": at + 1, "by": "api:acme", "reason": "quiet hours"},
        {"kind": "RESUMED", "at_ms": at + 2, "by": "api:admin:ops-alice", "reason": "resumed"},
        {"kind": "FIRED", "at_ms": at + 3, "by": "cli:alice", "reason": "run now"},
    ]
    listed = acme.get("/api/v1/jobs").json()["items"]
    assert [(job["job_id"], job["commands"]) for job in listed] == [(job_id, None)]
    assert bolt.get(f"/api/v1/jobs/{job_id}").status_code == 404
    env = {**os.environ, "JOBSTREAM_API_URL": server.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
           "COLUMNS": "80"}  # fmt: skip
    result = subprocess.run([sys.executable, "-m", "jobstream", "history", job_id], env=env,
                            text=True, capture_output=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    start = lines.index("commands")
    rows = [line.split() for line in lines[start:] if "api:" in line or "cli:" in line]
    assert [row[2:] for row in rows] == [
        ["PAUSED", "api:acme", "quiet", "hours"], ["RESUMED", "api:admin:ops-alice", "resumed"],
        ["FIRED", "cli:alice", "run", "now"]], result.stdout  # fmt: skip


@pytest.mark.timeout(180)
def test_dead_letters_are_listed_and_redriven_per_owner(
    settings: Settings, topics: Topics, acme: httpx.Client, bolt: httpx.Client,
    admin: httpx.Client,
) -> None:  # fmt: skip
    at = now_ms()
    errors = [error_info(1, "TimeoutError", retryable=True)]
    mine = dead_lettered(at_ms=at, errors=errors, owner="acme")
    theirs = dead_lettered(at_ms=at, errors=errors, owner="bolt")
    produce(settings, topics.dead_letter("data.process"), [mine, theirs])
    listed = acme.get("/api/v1/dlq").json()["items"]
    assert [item["job_id"] for item in listed] == [mine.data["job_id"]]
    assert acme.get("/api/v1/dlq", params={"owner": "bolt"}).json()["items"] == []
    assert len(admin.get("/api/v1/dlq", params={"type": "data.process"}).json()["items"]) == 2
    # bolt's redrive of everything touches bolt's job only
    dry = bolt.post("/api/v1/dlq/redrive", json={"dry_run": True}).json()
    assert dry == {"job_ids": [theirs.data["job_id"]], "dry_run": True}
    assert bolt.post("/api/v1/dlq/redrive", json={"owner": "acme"}).json()["job_ids"] == []
    done = acme.post("/api/v1/dlq/redrive", json={"error_type": "TimeoutError", "rate": 50})
    assert done.status_code == 200 and done.json()["job_ids"] == [mine.data["job_id"]]
    retries = TopicReader(settings, topics.retry, settings.timer_partitions)
    try:
        found = wait_for(retries.poll, what="a RetryScheduled")
    finally:
        retries.close()
    assert [record["job_id"] for record in found] == [mine.data["job_id"]]
    bad = acme.post("/api/v1/dlq/redrive", json={"rate": 0})
    assert bad.status_code == 422 and bad.json()["field"] == "rate"
