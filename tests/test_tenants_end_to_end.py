"""Tenants at the Kafka door, on the secured broker the secured pipeline runs on
(tests/support/secure.py): an owner's principal submits only as its owner, and a
principal past its client quota is throttled by the broker."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from jobstream._ops.kafka.acls import Grant
from jobstream._ops.kafka.principals import bindings, upsert_users
from jobstream._ops.kafka.quotas import ClientQuota, read_changes, set_quota
from jobstream._ops.kafka.secure import ADMIN_USER
from jobstream._ops.stack import Stack
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.errors import AuthorizationError, ValidationError
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.jobs.outbound import job_events
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.admin import ensure_topics
from jobstream._pipeline.kafka.scan import TopicScan
from jobstream._pipeline.model.job import JobRequest
from jobstream._pipeline.serde import make_serde
from jobstream._pipeline.status.query import read_statuses
from jobstream._pipeline.topics import Topics, TopicSpec
from tests.support.secure import SecureKafka, secured_pipeline
from tests.support.waiting import wait_for

PROBE = "quota-probe"
QUOTA_BYTES_PER_S = 16 * 1024
SENT_BYTES = 16 * QUOTA_BYTES_PER_S
"""Kafka measures a rate over its whole sample window (11 one-second samples), so a burst
is throttled by about bytes/quota - 10 s: 16 s of the quota is throttled by some 5 s."""


@pytest.fixture(scope="module")
def timers(secured_kafka: SecureKafka,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:  # fmt: skip
    """The timers and the status processor, as their principals: a job fires to QUEUED."""
    with secured_pipeline(secured_kafka, tmp_path_factory.mktemp("stack"),
                          only=("timers", "status-processor")) as running:  # fmt: skip
        yield running


def test_an_owners_principal_submits_only_as_its_owner(secured_kafka: SecureKafka,
                                                       timers: Stack) -> None:  # fmt: skip
    """tenant-b's principal writing a job of tenant-a to its own door: refused to the
    intake DLQ naming the principal, never passed on nor fired; tenant-b's own job fires
    (no worker runs here: it waits QUEUED)."""
    kafka = secured_kafka
    b = kafka.owner("tenant-b")
    topics = Topics(b)
    [forged] = job_events([JobRequest(job_type="data.process", owner="tenant-a")], now_ms())
    serialize, _ = make_serde(None)
    producer = clients.producer(b)  # any Kafka client as B: it may write its door only
    producer.produce(topics.owner_intake("tenant-b"), serialize(forged, None), b"forged")
    assert producer.flush(30) == 0
    with JobClient(b) as client:
        assert client.topic == topics.owner_intake("tenant-b")
        own = client.submit(JobRequest(job_type="data.process", owner="tenant-b"))
        with pytest.raises(ValidationError, match="names owner 'tenant-a'"):
            client.submit(JobRequest(job_type="data.process", owner="tenant-a"))
    with (pytest.raises(AuthorizationError, match="User:jobstream-owner-tenant-b"),
          JobClient(kafka.owner("tenant-b", door="tenant-a"), delivery_timeout_s=10) as wrong):
        wrong.submit(JobRequest(job_type="data.process", owner="tenant-a"))  # fmt: skip

    forged_id = forged.data.job_id.encode()
    admin = kafka.settings(ADMIN_USER)

    def dead_letter() -> object | None:
        with TopicScan(admin, topics.intake_dlq) as scan:
            return next((m for batch in scan for m in batch if forged_id in m.value()), None)

    found = wait_for(dead_letter, timeout_s=60, interval_s=0.5, what="the forged job's DLQ entry")
    headers = dict(found.headers())
    assert headers["jobstream.principal"] == b"User:jobstream-owner-tenant-b"
    assert b"names owner 'tenant-a'" in headers["jobstream.error"]
    assert headers["jobstream.source"].startswith(topics.owner_intake("tenant-b").encode())
    console = kafka.role("console")
    wait_for(lambda: own in read_statuses(console, owner="tenant-b")
             and read_statuses(console, owner="tenant-b")[own].state == "QUEUED",
             timeout_s=60, interval_s=0.5, what=f"tenant-b's {own} fired (QUEUED)")  # fmt: skip
    assert read_statuses(console, owner="tenant-b")[own].submitted_by == (
        "kafka:User:jobstream-owner-tenant-b")  # the timers name the door's principal
    # The forged record's transaction committed with its DLQ entry: nothing passed it on.
    for topic in (topics.intake, topics.events):
        with TopicScan(admin, topic) as scan:
            assert not [m for batch in scan for m in batch if forged_id in (m.value() or b"")]
    assert forged.data.job_id not in read_statuses(console, owner="tenant-a")


@pytest.fixture(scope="module")
def probe(secured_kafka: SecureKafka) -> Iterator[str]:
    """A principal of its own with a topic it writes and reads, bounded by client quotas
    (who set them recorded); its topic."""
    kafka = secured_kafka
    admin = kafka.settings(ADMIN_USER)
    topic = f"{kafka.prefix}{PROBE}"
    ensure_topics(admin.kafka_config, [TopicSpec(topic, 1)])
    upsert_users(admin.kafka_config, {PROBE: kafka.cluster.security.password(PROBE)})
    grants = [Grant("TOPIC", topic, False, ("READ", "WRITE"), "the probe"),
              Grant("GROUP", PROBE, False, ("READ",), "the probe")]  # fmt: skip
    client = AdminClient(dict(admin.kafka_config))  # held: futures fail once it is freed
    for future in client.create_acls(bindings(PROBE, grants), request_timeout=30).values():
        future.result(timeout=30)
    quota = ClientQuota(PROBE, QUOTA_BYTES_PER_S, QUOTA_BYTES_PER_S)
    set_quota(admin, quota, set_by="tests:tenants")
    assert read_changes(admin)[PROBE].set_by == "tests:tenants"
    yield topic


def _throttle_ms(stats: list[dict[str, object]]) -> int:
    """The longest throttle the broker reported in librdkafka's statistics."""
    return max((int(broker["throttle"]["max"])  # type: ignore[index]
                for s in stats for broker in s["brokers"].values()), default=0)  # type: ignore[attr-defined]


def _produce(kafka: SecureKafka, user: str, topic: str, *, watch_s: float) -> int:
    """Send :data:`SENT_BYTES` as ``user``; the longest throttle reported within ``watch_s``
    of the last acknowledgement (the statistics come every 200 ms)."""
    stats: list[dict[str, object]] = []
    producer = Producer({**clients.producer_config(kafka.settings(user)),
                         "statistics.interval.ms": 200, "linger.ms": 5,
                         "stats_cb": lambda text: stats.append(json.loads(text))})  # fmt: skip
    for _ in range(SENT_BYTES // 1024):  # random: the producer compresses (lz4)
        producer.produce(topic, os.urandom(1024))
    assert producer.flush(60) == 0
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline and not _throttle_ms(stats):
        producer.poll(0.2)
    return _throttle_ms(stats)


def test_a_principal_past_its_produce_quota_is_throttled_by_the_broker(
    secured_kafka: SecureKafka, probe: str
) -> None:
    assert _produce(secured_kafka, ADMIN_USER, probe, watch_s=1) == 0  # no quota
    assert _produce(secured_kafka, PROBE, probe, watch_s=10) >= 500


def test_a_principal_past_its_fetch_quota_is_throttled_by_the_broker(
    secured_kafka: SecureKafka, probe: str
) -> None:
    _produce(secured_kafka, ADMIN_USER, probe, watch_s=0)  # what the probe then reads
    stats: list[dict[str, object]] = []
    consumer = Consumer({**clients.consumer_config(secured_kafka.settings(PROBE), PROBE),
                         "statistics.interval.ms": 200,
                         "stats_cb": lambda text: stats.append(json.loads(text))})  # fmt: skip
    try:
        consumer.assign([TopicPartition(probe, 0, OFFSET_BEGINNING)])
        # The first fetches return more than the quota allows in its whole window: the
        # broker answers with how long it throttles the principal, and mutes it that long.
        deadline = time.monotonic() + 30
        while _throttle_ms(stats) < 500 and time.monotonic() < deadline:
            consumer.consume(100, timeout=0.2)
        assert _throttle_ms(stats) >= 500
    finally:
        consumer.close()
