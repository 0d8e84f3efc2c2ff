"""The commit order of a consume-transform-produce batch, in one place.

1. Everything the batch produced is flushed, so every delivery report (the changelog
   offsets the stores will record) has run.
2. The consumer's positions are sent to the transaction with the group metadata: a
   member that has been fenced by a rebalance fails here, and its batch aborts.
3. The transaction commits: outputs, changelog and input offsets become visible at once.

On an abortable error the batch is aborted and the consumer rewound to the committed
offsets, so the same input is processed again; the local stores were not touched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from jobstream._pipeline.kafka.clients import TRANSACTION_TIMEOUT_MS

log = logging.getLogger(__name__)

COMMIT_TIMEOUT_S = TRANSACTION_TIMEOUT_MS / 1000
"""The longest each step of a commit or an abort may block: a transaction still open
after that is aborted by the broker anyway."""
STUCK_GRACE_S = 5.0
"""How far past its own timeout a librdkafka call may run before it is given up."""


def commit_batch(
    producer: Producer, consumer: Consumer, timeout_s: float = COMMIT_TIMEOUT_S
) -> None:
    """Commit the open transaction with the consumer's current positions."""
    positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
    commit_offsets(producer, consumer, positions, timeout_s)


def abort_batch(
    producer: Producer, consumer: Consumer, timeout_s: float = COMMIT_TIMEOUT_S
) -> None:
    """Abort the open transaction and rewind the consumer to its committed offsets."""
    producer.abort_transaction(timeout_s)
    rewind(consumer, timeout_s)


def rewind(consumer: Consumer, timeout_s: float = COMMIT_TIMEOUT_S) -> None:
    """Seek every assigned partition back to its committed offset (the batch is redone)."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=timeout_s):
        offset = tp.offset if tp.offset != OFFSET_INVALID else 0
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset))


def is_fatal(error: object) -> bool:
    """Whether a client is done for: a producer's error flagged fatal, or a consumer's
    (a static member fenced by another with its id), which consume() reports as _FATAL."""
    return isinstance(error, KafkaError) and (error.fatal() or error.code() == KafkaError._FATAL)


def is_abortable(exc: KafkaException) -> bool:
    error = exc.args[0]
    return bool(getattr(error, "txn_requires_abort", lambda: False)())


def commit_offsets(
    producer: Producer,
    consumer: Consumer,
    offsets: list[TopicPartition],
    timeout_s: float = COMMIT_TIMEOUT_S,
) -> None:
    """Commit the open transaction with explicit ``offsets`` instead of the positions.

    For consumers whose records finish out of order (the workers): the position is past
    records still running, so the caller passes the watermark of what has finished.
    The order is that of :func:`commit_batch`: flush, send the offsets with the group
    metadata (a fenced member fails here and its batch aborts), commit.
    """
    if producer.flush(timeout_s) > 0:  # a leader away: aborting drops them, then retry
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                        f"records still undelivered after {timeout_s:g} s",
                                        txn_requires_abort=True))  # fmt: skip
    if offsets:
        metadata = consumer.consumer_group_metadata()
        bounded(lambda: producer.send_offsets_to_transaction(offsets, metadata, timeout_s),
                timeout_s, "send_offsets_to_transaction")  # fmt: skip
    producer.commit_transaction(timeout_s)


def bounded(call: Callable[[], None], timeout_s: float, what: str, *,
            grace_s: float = STUCK_GRACE_S) -> None:  # fmt: skip
    """Run ``call``, a librdkafka call given ``timeout_s``, but never wait much longer.

    librdkafka does not always keep its own timeout: ``send_offsets_to_transaction``
    waits for a group coordinator that has gone (a broker killed or paused) with no end
    (librdkafka issues 5456 and 5511). The call runs on a thread of its own; when it
    outlives its timeout by ``grace_s``, it is left behind and a fatal error
    raised, which the caller mends as any fatal producer error: a new producer with the
    same transactional id fences the stuck one.
    """
    failure: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    worker = threading.Thread(target=run, name=f"kafka-{what}", daemon=True)
    worker.start()
    worker.join(timeout_s + grace_s)
    if worker.is_alive():
        log.error("%s still blocked after %.0f s: giving the producer up", what,
                  timeout_s + grace_s)  # fmt: skip
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                        f"{what} blocked past its {timeout_s:g} s timeout",
                                        fatal=True))  # fmt: skip
    if failure:
        raise failure[0]


def send(producer: Producer, topic: str, value: bytes | None, key: bytes | None,
         **kwargs: Any) -> None:  # fmt: skip
    """Produce, waiting while the producer's local queue is full (a large batch)."""
    while True:
        try:
            producer.produce(topic, value, key, **kwargs)
            return
        except BufferError:  # serve delivery reports to make room, then try again
            producer.poll(0.05)


def transact(producer: Producer, consumer: Consumer, produce: Callable[[], None]) -> bool:
    """One batch as one transaction: begin, ``produce`` its records, commit (commit_batch).

    Returns False when the batch was aborted (the consumer rewound, so the same input
    comes again), after which the caller drops its pending state. An error that is not
    abortable (a fenced producer) is raised: the process must stop.
    """
    producer.begin_transaction()
    try:
        produce()
        commit_batch(producer, consumer)
    except KafkaException as exc:
        if not is_abortable(exc):
            raise
        log.warning("transaction aborted: %s", exc)
        abort_batch(producer, consumer)
        return False
    return True


KAFKA_FAILURES = (KafkaException, SystemError)
"""What a Kafka call may raise on a broker or transaction error: confluent-kafka raises a
SystemError, with the KafkaException as its context, when a fatal error meets a Python
callback (a delivery report) in the same call."""


def kafka_error_of(exc: BaseException) -> KafkaException | None:
    """The KafkaException ``exc`` is or carries; None for any other error."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaException):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
