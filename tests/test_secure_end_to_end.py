"""The pipeline on a secured broker (TLS, SASL/SCRAM-SHA-512, ACLs), each process as its
own role's principal with only ops/kafka/acls.py's grants: a job submitted by the client
principal fires, runs on a worker and is read by the console principal; a principal
without the ACL is refused with an error naming the topic, at once."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.kafka.acls import principal
from jobstream._ops.kafka.jars import classpath, java_executable
from jobstream._ops.stack import Stack
from jobstream._pipeline.config import Settings
from jobstream._pipeline.console.tail import tail_topic
from jobstream._pipeline.errors import AuthorizationError
from jobstream._pipeline.jobs.aio import AsyncJobClient
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import ADMIN, TOKENS, api_settings
from tests.support.secure import SecureKafka, secured_pipeline
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def kafka(secured_kafka: SecureKafka) -> SecureKafka:
    return secured_kafka


@pytest.fixture(scope="module")
def stack(kafka: SecureKafka, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with secured_pipeline(kafka, tmp_path_factory.mktemp("stack")) as running:
        yield running


def test_a_job_submitted_by_the_client_runs_and_the_console_reads_its_status(
    kafka: SecureKafka, stack: Stack
) -> None:
    with JobClient(kafka.role("client")) as client:
        job_id = client.submit(JobRequest(job_type="data.process", owner="secure", params={}))
    console = kafka.role("console")

    def succeeded() -> bool:
        found = read_statuses(console, owner="secure")
        return job_id in found and found[job_id].state == "SUCCEEDED"

    wait_for(succeeded, timeout_s=60, interval_s=0.5, what=f"{job_id} SUCCEEDED")
    history = io.BytesIO()  # `jobstream tail jobs.events`, as the console principal
    tail_topic(console, Topics(console).events, history, from_beginning=True, to_end=True)
    assert job_id.encode() in history.getvalue() and b"SUCCEEDED" in history.getvalue()
    with pytest.raises(AuthorizationError, match=r"may not DESCRIBE topic 'secure\.jobs\.intake'"):
        tail_topic(console, Topics(console).intake, io.BytesIO(), to_end=True)


def test_a_principal_without_the_acl_is_refused_naming_the_topic(kafka: SecureKafka) -> None:
    started = time.monotonic()
    with (pytest.raises(AuthorizationError) as refused,
          JobClient(kafka.role("console"), delivery_timeout_s=10) as console):  # fmt: skip
        console.submit(JobRequest(job_type="data.process", owner="secure", params={}))
    assert time.monotonic() - started < 10
    intake = Topics(kafka.role("console")).intake
    assert (refused.value.resource, refused.value.name, refused.value.operation) == (
        "topic", intake, "WRITE")
    assert intake in str(refused.value) and "WRITE" in str(refused.value)
    assert "User:jobstream-console" in str(refused.value)


def test_the_async_client_logs_in_as_the_sync_one_does(kafka: SecureKafka,
                                                       stack: Stack) -> None:
    """SCRAM over TLS from the same settings, through aiokafka: the client principal's job
    runs; the console principal is refused, naming the topic, at once."""

    async def submit(settings: Settings) -> str:
        async with AsyncJobClient(settings, delivery_timeout_s=10) as client:
            return await client.submit(JobRequest(job_type="data.process", owner="secure-aio"))

    job_id = asyncio.run(submit(kafka.role("client")))
    console = kafka.role("console")

    def succeeded() -> bool:
        found = read_statuses(console, owner="secure-aio")
        return job_id in found and found[job_id].state == "SUCCEEDED"

    wait_for(succeeded, timeout_s=60, interval_s=0.5, what=f"{job_id} SUCCEEDED")
    started = time.monotonic()
    with pytest.raises(AuthorizationError) as refused:
        asyncio.run(submit(console))
    assert time.monotonic() - started < 10
    assert (refused.value.resource, refused.value.name, refused.value.operation) == (
        "topic", Topics(console).intake, "WRITE")


def test_a_processor_run_as_another_principal_stops_naming_what_it_lacks(
    kafka: SecureKafka, tmp_path: Path
) -> None:
    """The console principal running the status processor: refused at start, with an
    error naming the topic it may not see (the processor's handover topic: its changelog,
    jobs.status, it may read), not told to create it nor retried for minutes."""
    console = kafka.role("console")
    runner = status_runner(console, dataclasses.replace(STATUS_OPTIONS, state_dir=tmp_path,
                                                        instance_id="intruder"))  # fmt: skip
    started = time.monotonic()
    try:
        with pytest.raises(AuthorizationError) as refused:
            runner.run(threading.Event())
    finally:
        runner.close()
    assert time.monotonic() - started < 10
    hidden = Topics(console).status_handover
    assert (refused.value.resource, refused.value.name, refused.value.operation) == (
        "topic", hidden, "DESCRIBE")
    assert hidden in str(refused.value) and "User:jobstream-console" in str(refused.value)


def test_the_api_as_its_principal_takes_jobs_and_shows_them(
    kafka: SecureKafka, stack: Stack, tmp_path: Path
) -> None:
    """The HTTP API with its view updater, DLQ reader and intake producer, all as the API
    principal."""
    api = api_settings(tmp_path)
    with ApiServer(kafka.role("api"), api) as server, httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKENS['acme']}"}, timeout=30
    ) as acme:
        reply = acme.post("/api/v1/jobs", json={"job_type": "data.process"})
        assert reply.status_code == 201, reply.text
        job_id = reply.json()["job_id"]

        def succeeded() -> bool:
            shown = acme.get(f"/api/v1/jobs/{job_id}")
            return shown.status_code == 200 and shown.json()["state"] == "SUCCEEDED"

        wait_for(succeeded, timeout_s=60, interval_s=0.5, what=f"{job_id} SUCCEEDED in the API")
        with httpx.Client(base_url=server.url, timeout=30,
                          headers={"Authorization": f"Bearer {ADMIN}"}) as admin:  # fmt: skip
            assert admin.get("/api/v1/dlq").status_code == 200


def test_kafkas_console_consumer_reads_the_status_with_the_console_credentials(
    kafka: SecureKafka, stack: Stack, tmp_path: Path
) -> None:
    """docs/kafka-security.md's Java console consumer, as the console principal: a client
    of another language than jobstream's reads jobs.status through TLS and SCRAM."""
    with JobClient(kafka.role("client")) as client:
        job_id = client.submit(JobRequest(job_type="data.process", owner="java", params={}))
    console = kafka.role("console")
    wait_for(lambda: job_id in read_statuses(console, owner="java"), timeout_s=60,
             what=f"{job_id} in jobs.status")  # fmt: skip
    properties = tmp_path / "console.properties"
    properties.write_text(kafka.cluster.security.java_properties(principal("console")))
    # --timeout-ms: it stops once no record came for 20 s, counted from its start too: a
    # JVM's start, TLS, SCRAM and joining its group take seconds on a loaded machine.
    run = subprocess.run(
        [java_executable(), "-cp", classpath(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", kafka.bootstrap, "--consumer.config", str(properties),
         "--topic", Topics(console).status, "--from-beginning", "--timeout-ms", "20000",
         "--property", "print.key=true", "--group", f"{kafka.prefix}jobstream.status-query.java"],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    keys = {line.split("\t", 1)[0] for line in run.stdout.splitlines()}
    assert job_id in keys, run.stderr[-2000:]
    [latest] = [line.split("\t", 1)[1] for line in run.stdout.splitlines()
                if line.startswith(job_id)][-1:]  # fmt: skip
    assert orjson.loads(latest)["state"] in ("QUEUED", "RUNNING", "SUCCEEDED")
