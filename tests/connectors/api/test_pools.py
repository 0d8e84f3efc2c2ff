"""A job of a pool with no live worker shows as waiting for its pool, through the API and
the views on the real broker: on the job, in the listing, in ``jobstream jobs list`` and
in the API's metric, until a worker of that pool is alive."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from connectors.api.server import ApiServer
from pipeline import metrics
from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.kafka import clients
from pipeline.serde import Event, encode_status
from pipeline.status.runner import STATUS_OPTIONS, status_runner
from pipeline.timers.runner import TIMER_OPTIONS, timer_runner
from pipeline.topics import Topics
from pipeline.worker import JobContext, LocalResultStore, WorkerApp
from pipeline.worker.heartbeat import RUNNING, WorkerIdentity
from pipeline.worker.options import WorkerOptions
from pipeline.worker.runtime import WorkerRuntime
from tests.connectors.api.conftest import TOKENS
from tests.connectors.views.records import status, submitted
from tests.pipeline.worker.support import Worker
from tests.support.pipeline import SERIALIZE, in_thread, produce
from tests.support.scrape import has, scrape, value
from tests.support.waiting import wait_for

GAUGE = "jobstream_jobs_waiting_for_pool"

app = WorkerApp()


@app.handler("image.render")
def render(ctx: JobContext) -> None:
    return None


@pytest.fixture
def metrics_port() -> Iterator[int]:
    """This process's /metrics, as ``jobstream api --metrics-port`` serves it."""
    served = metrics.serve(0)
    yield served.server_address[1]
    served.shutdown()
    served.server_close()


def test_a_queued_job_of_an_unserved_pool_is_waiting_until_a_worker_of_it_beats(
        settings: Settings, topics: Topics, acme: httpx.Client, server: ApiServer,
        metrics_port: int) -> None:  # fmt: skip
    at = now_ms()
    record = submitted("acme", "image.render", at_ms=at, pool="gpu")
    plain_job = submitted("acme", "image.render", at_ms=at + 1)
    job_id = record["job_id"]
    plain = WorkerIdentity("plain-1", ("image.render",), 4, at)
    producer = clients.producer(settings)
    for job in (record, plain_job):
        key = job["job_id"].encode()
        producer.produce(topics.intake, SERIALIZE(Event("JobSubmitted", job)), key)
        producer.produce(topics.status, encode_status(status(job, "QUEUED", at_ms=at + 2)), key)
    _beat(producer, topics, plain)

    def job() -> dict:
        return acme.get(f"/api/v1/jobs/{job_id}").json()

    def listed() -> dict[str, bool]:
        items = acme.get("/api/v1/jobs", params={"type": "image.render"}).json()["items"]
        return {item["job_id"]: item["waiting_for_pool"] for item in items}

    waiting = wait_for(lambda: (j := job()).get("state") == "QUEUED" and j, what="the job QUEUED")
    assert waiting["pool"] == "gpu" and waiting["waiting_for_pool"] is True
    wait_for(lambda: len(listed()) == 2, what="both jobs listed")
    assert listed() == {job_id: True, plain_job["job_id"]: False}
    queued = acme.get("/api/v1/jobs", params={"state": "QUEUED"}).json()["items"]
    assert {item["job_id"]: item["waiting_for_pool"] for item in queued} == listed()
    assert value(scrape(metrics_port), GAUGE, pool="gpu", job_type="image.render") == 1
    shown = _jobs_list(server, columns=200)
    assert "gpu: no live worker" in shown and job_id in shown, shown
    assert max(len(line) for line in _jobs_list(server, columns=80).splitlines()) <= 80

    _beat(producer, topics, WorkerIdentity("gpu-1", ("image.render",), 4, at, pool="gpu"))
    wait_for(lambda: job()["waiting_for_pool"] is False, what="the gpu worker seen")
    assert listed() == {job_id: False, plain_job["job_id"]: False}
    assert not has(scrape(metrics_port), GAUGE)
    shown = _jobs_list(server, columns=200)
    assert "no live worker" not in shown and "gpu" in shown, shown
    workers = acme.get("/api/v1/workers").json()["workers"]
    assert {w["worker_id"]: w["pool"] for w in workers} == {"plain-1": None, "gpu-1": "gpu"}


@pytest.mark.timeout(180)
def test_a_job_fired_to_a_pool_waits_in_the_listing_until_a_worker_of_the_pool_runs_it(
        topics: Topics, acme: httpx.Client, metrics_port: int, tmp_path: Path) -> None:  # fmt: skip
    settings = topics.settings
    timers = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
    statuses = STATUS_OPTIONS.evolve(instance_id="s", state_dir=tmp_path / "status")
    record = submitted("acme", "image.render", at_ms=now_ms(), pool="gpu")
    job_id = record["job_id"]

    def listed() -> dict:
        items = acme.get("/api/v1/jobs", params={"type": "image.render"}).json()["items"]
        return next((item for item in items if item["job_id"] == job_id), {})

    with in_thread(timer_runner(settings, timers)), in_thread(status_runner(settings, statuses)):
        produce(settings, topics.intake, [Event("JobSubmitted", record)])
        waiting = wait_for(lambda: (j := listed()).get("state") == "QUEUED" and j,
                           timeout_s=60, what="the job fired and QUEUED")  # fmt: skip
        assert waiting["pool"] == "gpu" and waiting["waiting_for_pool"] is True
        assert value(scrape(metrics_port), GAUGE, pool="gpu", job_type="image.render") == 1
        worker = Worker(WorkerRuntime(settings, app, WorkerOptions(
            worker_id="gpu-1", job_types=("image.render",), pool="gpu",
            result_store=LocalResultStore(tmp_path / "results"))))  # fmt: skip
        worker.thread = threading.Thread(target=worker.run, daemon=True)
        worker.thread.start()
        try:
            done = wait_for(lambda: (j := listed()).get("state") == "SUCCEEDED" and j,
                            timeout_s=90, what="the gpu worker to run it")  # fmt: skip
        finally:
            worker.shut_down()
        assert worker.error is None
    assert done["waiting_for_pool"] is False
    assert not has(scrape(metrics_port), GAUGE)


def _jobs_list(server: ApiServer, *, columns: int) -> str:
    env = {**os.environ, "JOBSTREAM_API_URL": server.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
           "COLUMNS": str(columns)}  # fmt: skip
    result = subprocess.run([sys.executable, "-m", "ops", "jobs", "list", "--type", "image.render"],
                            env=env, text=True, capture_output=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def _beat(producer: Producer, topics: Topics, identity: WorkerIdentity) -> None:
    """The worker's heartbeat on jobs.workers, keyed by its id as the worker writes it."""
    producer.produce(topics.workers, SERIALIZE(identity.record(RUNNING, (), now_ms())),
                     identity.worker_id.encode())  # fmt: skip
    assert producer.flush(30) == 0
