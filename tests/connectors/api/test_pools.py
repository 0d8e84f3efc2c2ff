"""A job of a pool with no live worker shows as waiting for its pool, through the API and
the views on the real broker, until a worker of that pool sends its heartbeat."""

from __future__ import annotations

import httpx
from confluent_kafka import Producer

from pipeline.clock import now_ms
from pipeline.config import Settings
from pipeline.kafka import clients
from pipeline.serde import Event, encode_status
from pipeline.topics import Topics
from pipeline.worker.heartbeat import RUNNING, WorkerIdentity
from tests.connectors.views.records import status, submitted
from tests.support.pipeline import SERIALIZE
from tests.support.waiting import wait_for


def test_a_queued_job_of_an_unserved_pool_is_waiting_until_a_worker_of_it_beats(
        settings: Settings, topics: Topics, acme: httpx.Client) -> None:  # fmt: skip
    at = now_ms()
    record = submitted("acme", "image.render", at_ms=at, pool="gpu")
    job_id = record["job_id"]
    plain = WorkerIdentity("plain-1", ("image.render",), 4, at)
    producer = clients.producer(settings)
    producer.produce(topics.intake, SERIALIZE(Event("JobSubmitted", record)), job_id.encode())
    producer.produce(topics.status, encode_status(status(record, "QUEUED", at_ms=at + 1)),
                     job_id.encode())  # fmt: skip
    _beat(producer, topics, plain)

    def job() -> dict:
        return acme.get(f"/api/v1/jobs/{job_id}").json()

    waiting = wait_for(lambda: (j := job()).get("state") == "QUEUED" and j, what="the job QUEUED")
    assert waiting["pool"] == "gpu" and waiting["waiting_for_pool"] is True
    _beat(producer, topics, WorkerIdentity("gpu-1", ("image.render",), 4, at, pool="gpu"))
    wait_for(lambda: job()["waiting_for_pool"] is False, what="the gpu worker seen")
    workers = acme.get("/api/v1/workers").json()["workers"]
    assert {w["worker_id"]: w["pool"] for w in workers} == {"plain-1": None, "gpu-1": "gpu"}


def _beat(producer: Producer, topics: Topics, identity: WorkerIdentity) -> None:
    """The worker's heartbeat on jobs.workers, keyed by its id as the worker writes it."""
    producer.produce(topics.workers, SERIALIZE(identity.record(RUNNING, (), now_ms())),
                     identity.worker_id.encode())  # fmt: skip
    assert producer.flush(30) == 0
