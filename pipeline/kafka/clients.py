"""Kafka clients built from the settings, with the librdkafka tuning in one place.

Latency matters more than throughput for a scheduler, but a batch per transaction keeps
the cost per job low: producers linger 5 ms, consumers on the latency path (workers)
get a fetch answered as soon as one record is there, and transactional consumers read
committed data only. A fetch costs the broker about the same whatever it returns, so
consumers whose reading may lag a little ask for bigger, rarer fetches
(:data:`BATCHED_FETCH`, :data:`PROMPT_FETCH`). docs/kafka-tuning.md has the reasons.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from jobstream._pipeline.config import MAX_MESSAGE_BYTES, Settings

log = logging.getLogger(__name__)

KafkaValue = str | int | float | bool | logging.Logger | Callable[..., object]
"""One librdkafka setting: text, a number, a flag, or (confluent-kafka's) a logger or a
callback."""
KafkaConfig = dict[str, KafkaValue]
"""A librdkafka client's configuration."""

PRODUCER_TUNING: KafkaConfig = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "message.max.bytes": MAX_MESSAGE_BYTES + 65536,
    "enable.idempotence": True,
    "acks": "all",
    # Kafka's Java default for keyed records (librdkafka's own default hashes otherwise):
    # every producer of co-partitioned topics must put a key on the same partition.
    "partitioner": "murmur2_random",
}

TRANSACTIONAL_LINGER_MS = 1000
"""A transactional producer's linger. Every transaction ends in a flush, which sends what
lingers at once (librdkafka ignores the linger while flushing), so its records go out
at the commit in one request per broker rather than every 5 ms in small ones; only a
transaction open longer than this sends some before. In a burst of 20,000 jobs the small
requests were the broker's extra work (docs/benchmarks.md)."""

CONSUMER_TUNING: KafkaConfig = {
    "fetch.wait.max.ms": 10,
    "fetch.min.bytes": 1,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "isolation.level": "read_committed",
    "partition.assignment.strategy": "cooperative-sticky",
}


SESSION_TIMEOUT_MS = 6_000
"""How long a group waits for a member that stopped heartbeating (a killed process) before
its partitions go to the others: the broker's least (``group.min.session.timeout.ms``).
librdkafka heartbeats from its own thread, so a busy Python loop does not expire it."""

TRANSACTION_TIMEOUT_MS = 10_000
"""How long a transaction may stay open before the broker aborts it. A crashed process's
open transaction holds back what read_committed readers see on every partition it wrote
(jobs.events among them) until it is aborted, so this stays well below the status
processor's lease (30 s) minus the heartbeat interval (10 s): a run finished by another
worker meanwhile is seen finished before its lease could expire."""

BATCHED_FETCH: KafkaConfig = {"fetch.min.bytes": 256 * 1024, "fetch.wait.max.ms": 100}
"""For the retry router: a fetch waits for 256 KB or 100 ms, which bounds its fetches to
ten a second when quiet, and makes them large when busy."""

GROWN_PARTITIONS_SEEN: KafkaConfig = {"topic.metadata.refresh.interval.ms": 5_000}
"""For the clients that must see an execution topic grown (``jobstream topics grow
--exec-partitions``) while they run: the timers' producer, whose partitioner then spreads
executions over the new partitions, and the workers' consumers, whose group rebalances to
read them. librdkafka's default refresh is 5 minutes; a refresh is one small metadata
request for the topics the client uses (docs/scaling.md, "Growing the execution topics")."""

WORKER_FETCH: KafkaConfig = {"fetch.min.bytes": 1, "fetch.wait.max.ms": 100}
"""For the workers' executions, on the latency path: a fetch is answered as soon as one
committed record is there, whatever the wait (the broker answers a waiting read_committed
fetch when a transaction's marker moves the stable offset: about 1 ms after the commit at
a wait of 10 ms as at 500 ms, docs/kafka-tuning.md). So the wait bounds only the empty
fetches of a worker with nothing to do, ten a second rather than a hundred, and how late a
partition resumed beside idle ones is fetched again."""

PROMPT_FETCH: KafkaConfig = {"fetch.min.bytes": 1, "fetch.wait.max.ms": 500}
"""For the two processors a workflow's release passes through, the timers (their intake)
and the status processor (jobs.events): a fetch is answered as soon as a record is there
to read (for jobs.events, whose writers are transactional, as soon as a commit's marker
moves the stable offset), so no record waits for the fetch; the wait bounds only the
empty fetches, two a second when quiet. A 64 KB minimum with a 20 ms wait, before, held
each committed record up to 20 ms and made 50 empty fetches a second per processor: a
fifth of the broker's CPU at 10 jobs/s (docs/benchmarks.md, "Fetch waits")."""


CLIENT_ID = "jobstream"
"""What a plain producer tells the broker it is. A consumer tells its group and a
transactional producer its transactional id, so that the broker's request log and its
per-client metrics and quotas say which component sent what."""


def _librdkafka_logger(config: KafkaConfig, name: str) -> KafkaConfig:
    """Route librdkafka's own log lines through logging instead of raw stderr."""
    return {**config, "logger": logging.getLogger(f"librdkafka.{name}")}


def producer_config(settings: Settings, *, client_id: str = CLIENT_ID,
                    **overrides: KafkaValue) -> KafkaConfig:  # fmt: skip
    """An idempotent producer's settings; ``transactional_id`` makes it transactional
    (lingering until its commit, aborted by the broker after ``TRANSACTION_TIMEOUT_MS``).

    ``client_id`` names the producer to the broker; a transactional one is named by its
    transactional id. The user's own librdkafka settings (``JOBSTREAM_LIBRDKAFKA``) come
    last: they win over the tuning here and the caller's overrides, for producers and
    consumers alike."""
    config: KafkaConfig = {**settings.kafka_config, **PRODUCER_TUNING, "client.id": client_id}
    if "transactional_id" in overrides:
        config["transactional.id"] = config["client.id"] = overrides.pop("transactional_id")
        config["linger.ms"] = TRANSACTIONAL_LINGER_MS
        config["transaction.timeout.ms"] = TRANSACTION_TIMEOUT_MS
    return {**config, **overrides, **settings.librdkafka}


def consumer_config(settings: Settings, group_id: str, **overrides: KafkaValue) -> KafkaConfig:
    """A consumer's settings in ``group_id``; it commits nothing by itself."""
    config: KafkaConfig = {**settings.kafka_config, **CONSUMER_TUNING, "group.id": group_id,
                           "client.id": group_id}  # fmt: skip
    return {**config, **overrides, **settings.librdkafka}


def producer(settings: Settings, *, client_id: str = CLIENT_ID,
             **overrides: KafkaValue) -> Producer:  # fmt: skip
    """An idempotent producer (:func:`producer_config`)."""
    config = producer_config(settings, client_id=client_id, **overrides)
    return Producer(_librdkafka_logger(config, "producer"))


def consumer(settings: Settings, group_id: str, **overrides: KafkaValue) -> Consumer:
    """A consumer in ``group_id`` (:func:`consumer_config`)."""
    return Consumer(_librdkafka_logger(consumer_config(settings, group_id, **overrides),
                                       "consumer"))  # fmt: skip


def admin_client(config: Mapping[str, KafkaValue] | str, *, quiet: bool = False) -> AdminClient:
    """An admin client on ``config``: a client's settings, or a bare bootstrap address (a
    cluster other than the settings', as a mirror's source). Its librdkafka log lines go
    through logging, as the other clients'; ``quiet`` drops them, for a broker that may
    be starting or gone, whose connection errors are expected and asked about again."""
    base: dict[str, Any] = ({"bootstrap.servers": config} if isinstance(config, str)
                            else dict(config))  # fmt: skip
    routed: dict[str, Any] = _librdkafka_logger(base, "admin")
    return AdminClient({**base, "log_level": 0} if quiet else routed)


def processor_clients(
    settings: Settings, group: str, instance_id: str, *,
    producer_tuning: Mapping[str, KafkaValue] | None = None, **consumer_overrides: KafkaValue,
) -> tuple[Consumer, Producer]:
    """The consumer and transactional producer of a consume-transform-produce processor.

    The instance id names both the static group member and the transactional id: a
    restarted instance takes its partitions back at once (no wait for the dead member's
    session to expire) and aborts the transaction its predecessor left open. A member
    that leaves for good hands its partitions over after ``session.timeout.ms``.
    """
    member = f"{group}.{instance_id}"
    membership: KafkaConfig = {"group.instance.id": member,
                               "session.timeout.ms": SESSION_TIMEOUT_MS}  # fmt: skip
    return (
        consumer(settings, group, **{**membership, **consumer_overrides}),
        Producer(_librdkafka_logger({**producer_config(settings, transactional_id=member),
                                     **(producer_tuning or {}), **settings.librdkafka},
                                    "producer")),
    )  # fmt: skip
