"""Warm a freshly started broker so that the first real run is on time.

A broker's first minute is the JVM interpreting and compiling its request paths: the
first benchmark after a start paid 3.2-3.9 s of p99 start lateness where a warm broker
gives under 200 ms (docs/kafka-tuning.md). Class data sharing cannot help there (it
speeds class loading, not the JIT), so the start-up drives the paths the pipeline uses
for a while before anyone depends on them: idempotent lz4 batches, transactions with
offsets sent to them, read_committed fetches, group joins and offset commits, all on a
scratch topic deleted afterwards. Every call has a timeout; a warm-up that fails only
logs, since a cold broker is slow, not wrong.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.clients import CONSUMER_TUNING, PRODUCER_TUNING

log = logging.getLogger(__name__)

WARM_UP_S = 20.0
"""How long a broker just started is warmed up by default (`jobstream kafka up`, the
benchmarks' own broker); the measurements behind it are in docs/kafka-tuning.md."""
TOPIC = "jobstream.warmup"
PARTITIONS = 6
BATCH = 100
"""Records per transaction, about one timer tick's firings at 5,000 jobs/s."""
LOOPS = 4
"""Transactional loops at once, as the timers, status processor, retry router and a
worker run."""
_VALUE = os.urandom(120) * 2  # compressible, like Avro events with repeated fields
_CALL_TIMEOUT_S = 10.0
_COUNT_LOCK = threading.Lock()


@dataclass
class WarmUp:
    """What a warm-up did: its records and transactions, and why it stopped early if it did."""

    records: int = 0
    transactions: int = 0
    seconds: float = 0.0
    error: str | None = None


def warm_up(bootstrap: str, *, seconds: float, replication: int = 1,
            on_progress: Callable[[float], None] | None = None,
            client_config: Mapping[str, Any] | None = None) -> WarmUp:  # fmt: skip
    """Drive transactional traffic through the broker for ``seconds``; report what ran.

    ``on_progress`` is called with the fraction done after each transaction;
    ``client_config`` adds to the clients' settings (a secured cluster's super user).
    """
    result = WarmUp()
    if seconds <= 0:
        return result
    base: dict[str, Any] = {**(client_config or {}), "bootstrap.servers": bootstrap,
                            "log_level": 0}  # fmt: skip
    admin = clients.admin_client(base, quiet=True)
    started = time.monotonic()
    try:
        _create_topic(admin, replication)
        _drive(base, started + seconds, result, on_progress)
    except KafkaException as exc:
        result.error = str(exc)
        log.warning("broker warm-up stopped early: %s", exc)
    finally:
        _delete_topic(admin)
        result.seconds = time.monotonic() - started
    log.info("broker warm-up records=%d transactions=%d seconds=%.1f", result.records,
             result.transactions, result.seconds)  # fmt: skip
    return result


def _drive(base: dict[str, Any], deadline: float, result: WarmUp,
           on_progress: Callable[[float], None] | None) -> None:  # fmt: skip
    """:data:`LOOPS` processors' loops at once, each in a thread (librdkafka's calls leave
    the GIL): many small requests, as a running pipeline makes, compile the request paths
    sooner than a few large ones."""
    total = deadline - time.monotonic()
    errors: list[KafkaException] = []

    def loop(index: int) -> None:
        try:
            _loop(base, index, deadline, result)
        except KafkaException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(LOOPS)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        threads[0].join(0.5)
        if on_progress:
            on_progress(min(1.0, 1 - (deadline - time.monotonic()) / total))
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _loop(base: dict[str, Any], index: int, deadline: float, result: WarmUp) -> None:
    """One processor's loop: read committed records, write a batch and the read offsets
    in one transaction, commit."""
    producer = Producer({**base, **PRODUCER_TUNING,
                         "transactional.id": f"jobstream-warmup-{index}"})  # fmt: skip
    consumer = Consumer({**base, **CONSUMER_TUNING, "group.id": "jobstream-warmup"})
    try:
        _init_transactions(producer, deadline)
        # Assigned, not subscribed: four members joining one group would rebalance it
        # again and again while the warm-up is short; offsets still go to the group.
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING)
                         for p in range(index, PARTITIONS, LOOPS)])  # fmt: skip
        n = 0
        while time.monotonic() < deadline:
            read = consumer.consume(BATCH, 0.01)
            producer.begin_transaction()
            for _ in range(BATCH):
                producer.produce(TOPIC, _VALUE, f"{index}-{n}".encode())
                n += 1
            try:
                if read:
                    producer.send_offsets_to_transaction(
                        consumer.position(consumer.assignment()),
                        consumer.consumer_group_metadata(), _CALL_TIMEOUT_S)  # fmt: skip
                producer.commit_transaction(_CALL_TIMEOUT_S)
            except KafkaException as exc:  # abortable (a broker hiccup): abort, go on
                if not exc.args[0].txn_requires_abort():
                    raise
                producer.abort_transaction(_CALL_TIMEOUT_S)
                continue
            with _COUNT_LOCK:
                result.records += BATCH
                result.transactions += 1
    finally:
        consumer.close()
        producer.flush(_CALL_TIMEOUT_S)


def _init_transactions(producer: Producer, deadline: float) -> None:
    """A broker just started has no transaction coordinator for a moment (its state topic
    is created on first use): retry what the broker calls retriable until ``deadline``."""
    while True:
        try:
            producer.init_transactions(_CALL_TIMEOUT_S)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _create_topic(admin: AdminClient, replication: int) -> None:
    futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, replication)],
                                  operation_timeout=_CALL_TIMEOUT_S,
                                  request_timeout=_CALL_TIMEOUT_S)  # fmt: skip
    try:
        futures[TOPIC].result()
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def _delete_topic(admin: AdminClient) -> None:
    try:
        admin.delete_topics([TOPIC], operation_timeout=_CALL_TIMEOUT_S,
                            request_timeout=_CALL_TIMEOUT_S)[TOPIC].result()  # fmt: skip
    except KafkaException as exc:
        log.warning("could not delete the warm-up topic %s: %s", TOPIC, exc)
