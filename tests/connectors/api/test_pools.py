"""A job of a pool with no live worker shows as waiting for its pool, through the API and
the views on the real broker: on the job, in the listing, in ``jobstream jobs list`` and
in the API's metric, until a worker of that pool is alive. A job submitted over HTTP with
a pool (one, a batch, a workflow's step) fires to that pool's topics; a bad pool is 422."""

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

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.scrape import has, scrape, value
from jobstream._pipeline import metrics
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event, encode_status
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.worker import JobContext, WorkerApp
from jobstream._pipeline.worker.heartbeat import RUNNING, WorkerIdentity
from jobstream._pipeline.worker.loop import WorkerLoop
from jobstream._pipeline.worker.options import WorkerOptions
from tests.connectors.api.conftest import TOKENS
from tests.connectors.views.records import status, submitted
from tests.pipeline.worker.support import Worker
from tests.support.pipeline import SERIALIZE, in_thread, produce
from tests.support.reader import TopicReader
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
        worker = Worker(WorkerLoop(settings, app, WorkerOptions(
            worker_id="gpu-1", job_types=("image.render",), pool="gpu")))  # fmt: skip
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


@pytest.mark.timeout(180)
def test_a_job_submitted_over_http_with_a_pool_fires_to_the_pools_topic_and_waits(
        topics: Topics, acme: httpx.Client, tmp_path: Path) -> None:  # fmt: skip
    settings = topics.settings
    timers = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
    statuses = STATUS_OPTIONS.evolve(instance_id="s", state_dir=tmp_path / "status")
    with in_thread(timer_runner(settings, timers)), in_thread(status_runner(settings, statuses)):
        reply = acme.post("/api/v1/jobs", json={"job_type": "image.render", "pool": "gpu",
                                                "priority": "HIGH"})  # fmt: skip
        assert reply.status_code == 201, reply.text
        job_id = reply.json()["job_id"]
        shown = acme.get(f"/api/v1/jobs/{job_id}").json()  # before the views could read it
        assert shown["pool"] == "gpu", shown

        def job() -> dict:
            return acme.get(f"/api/v1/jobs/{job_id}").json()

        waiting = wait_for(lambda: (j := job()).get("state") == "QUEUED" and j,
                           timeout_s=60, what="the job fired and QUEUED")  # fmt: skip
    assert waiting["pool"] == "gpu" and waiting["waiting_for_pool"] is True
    items = acme.get("/api/v1/jobs", params={"type": "image.render"}).json()["items"]
    assert [(i["job_id"], i["pool"], i["waiting_for_pool"]) for i in items] == [
        (job_id, "gpu", True)]  # fmt: skip
    reader = TopicReader(settings, topics.execution("image.render", "HIGH", "gpu"),
                         settings.exec_partitions)  # fmt: skip
    try:
        fired = [r for r in reader.catch_up() if r["job_id"] == job_id]
    finally:
        reader.close()
    assert len(fired) == 1 and fired[0]["spec"]["pool"] == "gpu", fired


BAD_POOLS = ["GPU", "-gpu", "gpu.x", "eu west", "", "a" * 51, 5]
"""Upper case, a leading dash, a dot (topic names), a space, empty, too long, a number."""


def test_a_bad_pool_is_422_on_spec_pool_alone_or_in_a_batch(acme: httpx.Client) -> None:
    for pool in BAD_POOLS:
        reply = acme.post("/api/v1/jobs", json={"job_type": "image.render", "pool": pool})
        assert reply.status_code == 422, (pool, reply.text)
        assert reply.json()["field"] == "spec.pool", (pool, reply.json())
        batch = acme.post("/api/v1/jobs/batch", json={"jobs": [
            {"job_type": "image.render", "pool": "gpu"},
            {"job_type": "image.render", "pool": pool}]})  # fmt: skip
        assert batch.status_code == 422, (pool, batch.text)
        assert batch.json()["field"] == "jobs[1].spec.pool", (pool, batch.json())
    longest = "a" * 50
    accepted = acme.post("/api/v1/jobs", json={"job_type": "image.render", "pool": longest,
                                               "labels": {"t": "bad-pools"}})  # fmt: skip
    assert accepted.status_code == 201, accepted.text
    # Nothing of a refused batch was sent: the one job the views get is the accepted one.
    listed = wait_for(lambda: acme.get("/api/v1/jobs", params={"label": "t=bad-pools"})
                      .json()["items"], what="the accepted job in the views")  # fmt: skip
    assert [item["pool"] for item in listed] == [longest]
    assert [item["pool"] for item in acme.get("/api/v1/jobs").json()["items"]] == [longest]


def test_a_batch_and_a_workflow_take_a_pool_per_job(acme: httpx.Client) -> None:
    jobs = [{"job_type": "image.render", "pool": "gpu"}, {"job_type": "image.render"},
            {"job_type": "image.render", "pool": "eu-west"}]  # fmt: skip
    reply = acme.post("/api/v1/jobs/batch", json={"jobs": jobs})
    assert reply.status_code == 201, reply.text
    ids = reply.json()["job_ids"]
    pools = {job_id: job.get("pool") for job_id, job in zip(ids, jobs, strict=True)}
    assert {job_id: acme.get(f"/api/v1/jobs/{job_id}").json()["pool"] for job_id in ids} == pools

    def listed() -> dict[str, str | None]:
        items = acme.get("/api/v1/jobs", params={"type": "image.render"}).json()["items"]
        return {item["job_id"]: item["pool"] for item in items}

    wait_for(lambda: listed() == pools, what="the batch in the views, with its pools")

    steps = [
        {"name": "train", "job_type": "image.render", "pool": "gpu"},
        {"name": "report", "job_type": "image.render", "depends_on": ["train"]},
    ]
    flow = acme.post("/api/v1/workflows", json={"steps": steps})
    assert flow.status_code == 201, flow.text
    step_ids = flow.json()["job_ids"]
    assert acme.get(f"/api/v1/jobs/{step_ids['train']}").json()["pool"] == "gpu"
    assert acme.get(f"/api/v1/jobs/{step_ids['report']}").json()["pool"] is None
    bad = acme.post("/api/v1/workflows", json={"steps": [{**steps[0], "pool": "GPU"}]})
    assert bad.status_code == 422 and bad.json()["field"] == "steps.0.spec.pool", bad.text


def _jobs_list(server: ApiServer, *, columns: int) -> str:
    env = {**os.environ, "JOBSTREAM_API_URL": server.url, "JOBSTREAM_API_TOKEN": TOKENS["acme"],
           "COLUMNS": str(columns)}  # fmt: skip
    listing = ["jobs", "list", "--type", "image.render"]
    result = subprocess.run([sys.executable, "-m", "jobstream", *listing], env=env, text=True,
                            capture_output=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def _beat(producer: Producer, topics: Topics, identity: WorkerIdentity) -> None:
    """The worker's heartbeat on jobs.workers, keyed by its id as the worker writes it."""
    producer.produce(topics.workers, SERIALIZE(identity.record(RUNNING, (), now_ms())),
                     identity.worker_id.encode())  # fmt: skip
    assert producer.flush(30) == 0
