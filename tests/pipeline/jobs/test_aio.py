"""AsyncJobClient: the same calls as JobClient, records on the partitions JobClient uses,
and every failure (bad request, silent or absent broker, missing topic) an error that
names the job, within the timeout. All but the missing topic run without a broker.

The partition test runs both clients against librdkafka's mock cluster
(``test.mock.num.brokers``): a Kafka protocol server on a loopback port, served by
threads of this process, that creates a topic with four partitions when it is first used.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ConfigurationError, ValidationError
from jobstream._pipeline.jobs import JobClient, JobRequest, SubmissionError, idempotent_job_id
from jobstream._pipeline.jobs.aio import AsyncJobClient
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.topics import Topics
from tests.pipeline.jobs.intake import Received
from tests.support.reader import gather

MOCK_PARTITIONS = 4
"""How many partitions the mock cluster gives a topic it creates."""


@pytest.fixture
def mock_kafka() -> Iterator[str]:
    """The bootstrap address of a mock cluster of one broker, up while the test runs."""
    owner = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    [broker] = owner.list_topics(timeout=10).brokers.values()
    yield f"{broker.host}:{broker.port}"
    owner.flush(5)


def read_back(bootstrap: str, topic: str, count: int) -> list[Received]:
    _, deserialize = make_serde()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-back",
                         "enable.auto.commit": False, "log_level": 3})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(MOCK_PARTITIONS)])

    def decoded(message: Message) -> Received | None:
        if message.error() is not None:
            return None
        return Received(message.key(), message.partition(), deserialize(message.value()))

    return gather(consumer, decoded, count, timeout_s=30, what=f"{count} records on {topic}")


def test_the_two_clients_put_a_job_s_records_on_one_partition_as_java_would(
    mock_kafka: str, unique_name: str
) -> None:
    settings = Settings(bootstrap_servers=mock_kafka, topic_prefix=f"{unique_name}.")
    jobs = [JobRequest(job_type="data.process", owner="acme", params={"n": n}) for n in range(30)]
    in_workflow = [JobRequest(job_type="data.process", owner="acme", workflow_id=f"wf-{n}")
                   for n in range(10)]  # fmt: skip
    with JobClient(settings) as client:
        by_sync = client.submit_many(jobs)

    async def submit_and_cancel() -> list[str]:
        async with AsyncJobClient(settings, delivery_timeout_s=10) as client:
            ids = await client.submit_many([*jobs, *in_workflow])
            for job_id in by_sync:
                await client.cancel(job_id, reason="superseded")
            for request in in_workflow:
                await client.signal("acme", request.workflow_id or "", "go", {"n": 1})
            return ids

    by_async = asyncio.run(submit_and_cancel())
    records = read_back(mock_kafka, Topics(settings).intake, 2 * len(jobs) +
                        2 * len(in_workflow) + len(by_sync))  # fmt: skip
    signals = {r.event.data["workflow_id"]: r for r in records
               if r.event.name == "WorkflowSignalled"}  # fmt: skip
    records = [r for r in records if r.event.name != "WorkflowSignalled"]
    for record in records:
        assert record.partition == java_partition(record.key, MOCK_PARTITIONS)
    assert len({r.partition for r in records}) == MOCK_PARTITIONS
    where = {(r.event.name, r.event.data["job_id"]): (r.key, r.partition) for r in records}
    for job_id in by_sync:  # submitted by one client, cancelled by the other: they meet
        assert where["JobCancelled", job_id] == where["JobSubmitted", job_id]
    for job_id, request in zip(by_async[len(jobs):], in_workflow, strict=True):
        assert where["JobSubmitted", job_id][0] == (request.workflow_id or "").encode()
        signal = signals[request.workflow_id]  # a signal meets its workflow's jobs
        assert (signal.key, signal.partition) == where["JobSubmitted", job_id]


def test_every_call_of_the_sync_client_is_a_coroutine_with_the_same_signature() -> None:
    calls = [name for name, member in vars(JobClient).items()
             if callable(member) and not name.startswith("_")]  # fmt: skip
    assert {"submit", "submit_many", "submit_workflow", "cancel", "close"} <= set(calls)
    for name in calls:
        ours = getattr(AsyncJobClient, name)
        assert inspect.iscoroutinefunction(ours), name
        assert inspect.signature(ours) == inspect.signature(getattr(JobClient, name)), name


def test_a_bad_request_is_refused_before_anything_connects() -> None:
    client = AsyncJobClient(Settings(bootstrap_servers="127.0.0.1:9"))
    with pytest.raises(ValidationError) as refused:
        asyncio.run(client.submit(job_type="Data Process", owner="acme"))
    assert refused.value.field == "spec.job_type"
    with pytest.raises(TypeError, match="not both"):
        asyncio.run(client.submit(JobRequest(job_type="data.process", owner="acme"), owner="b"))


def test_settings_aiokafka_cannot_honour_stop_the_client_at_construction() -> None:
    settings = Settings(security_protocol="SASL_SSL", sasl_mechanism="GSSAPI")
    with pytest.raises(ConfigurationError, match="JOBSTREAM_SASL_MECHANISM: GSSAPI"):
        AsyncJobClient(settings)


@asynccontextmanager
async def silent_broker() -> AsyncIterator[str]:
    """The address of a port that takes connections and never answers, as a hung broker
    does; closed, with the connections it took, at the end."""
    taken: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _, writer: taken.append(writer), "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for writer in taken:
            writer.close()
        await server.wait_closed()


def test_a_silent_broker_fails_the_submission_naming_the_job_within_the_timeout() -> None:
    async def submit() -> tuple[SubmissionError, float]:
        async with silent_broker() as bootstrap:
            client = AsyncJobClient(Settings(bootstrap_servers=bootstrap), delivery_timeout_s=1)
            started = time.monotonic()
            with pytest.raises(SubmissionError) as failed:
                await client.submit(job_type="data.process", owner="acme", idempotency_key="k-1")
            elapsed = time.monotonic() - started
            await client.close()
        return failed.value, elapsed

    error, elapsed = asyncio.run(submit())
    assert elapsed < 3
    assert error.job_ids == [idempotent_job_id("acme", "k-1")]
    assert error.retryable
    assert "jobs.intake: 1 of 1 records not acknowledged: no answer within 1 s" in str(error)


def test_a_service_learns_at_its_start_that_the_broker_is_silent() -> None:
    async def start() -> SubmissionError:
        async with silent_broker() as bootstrap:
            with pytest.raises(SubmissionError) as failed:
                async with AsyncJobClient(Settings(bootstrap_servers=bootstrap,
                                                   topic_prefix="p."), delivery_timeout_s=0.5):
                    pass
        return failed.value

    error = asyncio.run(start())
    assert str(error).startswith("p.jobs.intake: could not connect to the broker")
    assert error.retryable and error.job_ids == []


def test_a_broker_nobody_listens_on_fails_every_job_of_the_batch() -> None:
    async def submit() -> SubmissionError:
        async with silent_broker() as bootstrap:
            pass  # the port is free again: connections are refused
        client = AsyncJobClient(Settings(bootstrap_servers=bootstrap), delivery_timeout_s=5)
        with pytest.raises(SubmissionError) as failed:
            await client.submit_many([JobRequest(job_type="data.process", owner="acme",
                                                 idempotency_key=f"k-{n}") for n in range(3)])
        await client.close()
        return failed.value

    error = asyncio.run(submit())
    assert error.job_ids == [idempotent_job_id("acme", f"k-{n}") for n in range(3)]
    assert "3 of 3 records not acknowledged: KafkaConnectionError" in str(error)


def test_a_missing_topic_fails_naming_it_and_the_job(kafka_bootstrap: str,
                                                     unique_name: str) -> None:  # fmt: skip
    settings = Settings(bootstrap_servers=kafka_bootstrap, topic_prefix=f"{unique_name}.none.")

    async def submit() -> tuple[SubmissionError, float]:
        async with AsyncJobClient(settings, delivery_timeout_s=2) as client:
            started = time.monotonic()
            with pytest.raises(SubmissionError) as failed:
                await client.submit(job_type="data.process", owner="acme", idempotency_key="k")
            return failed.value, time.monotonic() - started

    error, elapsed = asyncio.run(submit())
    assert elapsed < 5
    assert error.topic == f"{unique_name}.none.jobs.intake" and error.topic in str(error)
    assert error.job_ids == [idempotent_job_id("acme", "k")] and error.retryable
