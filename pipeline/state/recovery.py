"""Bring a partition store up to the end of its changelog.

From the store's recorded changelog offset when the local files are still valid (they
belong to this changelog and the offset lies within it), from the beginning otherwise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from pipeline.kafka.watermarks import watermarks
from pipeline.state.store import PartitionStore
from pipeline.state.transaction import PartitionTransaction

log = logging.getLogger(__name__)

Apply = Callable[[PartitionTransaction, bytes, bytes | None], None]


def restore(
    store: PartitionStore,
    consumer: Consumer,
    topic: str,
    partition: int,
    apply: Apply,
    *,
    layout: int = 1,
    chunk: int = 10_000,
    idle_s: float = 15.0,
    poll_s: float = 0.05,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Replay the changelog into ``store``; return the number of records applied.

    ``consumer`` reads committed data only and belongs to no group that commits. A
    changelog that stops short of its end is held by an open transaction; after
    ``idle_s`` (longer than any transaction may stay open) restoring goes on without it.
    The end of a transactional changelog is a commit marker, which no ``consume()``
    returns: polls are short (``poll_s``) so that reaching it costs milliseconds, not
    a long poll per partition. ``progress`` hears the records applied after each chunk.
    Files of another ``layout`` (the processor keeps its state another way than when it
    wrote them) are rebuilt from the changelog's start.
    """
    tp = TopicPartition(topic, partition)
    checkpoint = store.changelog_offset
    bound = store.changelog_topic == topic and store.layout == layout
    if bound and checkpoint is not None:
        low, high = _end_past(consumer, tp, checkpoint, idle_s)
    else:
        low, high = watermarks(consumer, tp)
    valid = bound and checkpoint is not None and low - 1 <= checkpoint < high
    if not valid:
        if checkpoint is not None or store.changelog_topic not in (None, topic):
            log.info("local state of %s[%d] is not valid (checkpoint %s, changelog %d..%d, "
                     "layout %d, now %d): full restore", topic, partition, checkpoint, low,
                     high, store.layout, layout)  # fmt: skip
        store.wipe()
        store.bind_changelog(topic, layout)
        checkpoint = low - 1
    start = low if checkpoint is None else checkpoint + 1
    if start >= high or (valid and start == high - 1):
        # A store that kept its checkpoint and has one offset left to read has nothing to
        # read: a committed record is followed by its commit marker, so that one offset is
        # the marker of the store's own last transaction (or a record not committed).
        return 0
    consumer.assign([TopicPartition(topic, partition, start)])
    applied = 0
    tx = PartitionTransaction(store)
    last_offset = checkpoint
    last_progress = time.monotonic()
    started = time.monotonic()
    try:
        while True:
            messages = consumer.consume(chunk, timeout=poll_s)
            for message in messages:
                if message.error() is not None:
                    log.warning("changelog read error: %s", message.error())
                    continue
                apply(tx, message.key() or b"", message.value())
                last_offset = message.offset()
                applied += 1
            if messages:
                last_progress = time.monotonic()
                tx.commit(last_offset)
                if progress is not None:
                    progress(len(messages))
            position = consumer.position([tp])[0].offset
            if position >= high:
                break
            if time.monotonic() - last_progress > idle_s:
                log.warning("changelog %s[%d] stalled at %d before %d (an open transaction?)",
                            topic, partition, position, high)  # fmt: skip
                break
    finally:
        consumer.unassign()
    tx.commit(last_offset)
    log.info("restored %s[%d]: %d records in %.1fs", topic, partition, applied,
             time.monotonic() - started)  # fmt: skip
    return applied


def _end_past(consumer: Consumer, tp: TopicPartition, checkpoint: int,
              wait_s: float) -> tuple[int, int]:  # fmt: skip
    """The changelog's offsets, once its end lies past ``checkpoint`` (or ``wait_s`` on).

    A store records only changelog offsets Kafka has committed, so an end at or before its
    checkpoint is an end read too early: from a leader that has not learnt yet that it lost
    its place (a broker back from a pause), or a last stable offset held back by a
    transaction still open. Taken at its word it would wipe a valid store and restore less
    than was committed. Only a changelog that stays behind (deleted and made again) sends
    the store to a full restore.
    """
    deadline = time.monotonic() + wait_s
    while True:
        low, high = watermarks(consumer, tp)
        if checkpoint < high or time.monotonic() > deadline:
            return low, high
        log.warning("changelog %s[%d] ends at %d, before this store's checkpoint %d: "
                    "asking again", tp.topic, tp.partition, high, checkpoint)  # fmt: skip
        time.sleep(0.5)
