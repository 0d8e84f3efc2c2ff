"""Bring partition stores up to the end of their changelog, all partitions at once.

Each store's files are judged first (pipeline/state/validity.py): kept, they are read on
after their checkpoint; otherwise they are wiped and rebuilt from the changelog's start.
Then one consumer, assigned every partition that has something to read, applies each
record to its partition's store, and lets a partition go as soon as it reaches its end:
a restore costs the slowest partition's time, not the sum of them all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition

from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.kafka.identity import TopicIdentity
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.state.validity import Checkpoint, Verdict, judge

log = logging.getLogger(__name__)

Apply = Callable[[PartitionBatch, bytes, bytes | None, Headers], None]
"""Apply one changelog record to a store: its key, its value (None: a tombstone) and its
headers (None when it has none)."""

ASK_AGAIN_S = 0.5
"""The pause between two readings of a changelog's end that lies before a checkpoint."""


def restore(
    store: PartitionStore,
    consumer: Consumer,
    topic: str,
    partition: int,
    apply: Apply,
    *,
    layout: int = 1,
    identity: TopicIdentity | None = None,
    idle_s: float = 15.0,
    progress: Callable[[int], None] | None = None,
) -> int:
    """:func:`restore_partitions` of one partition's store; the records applied."""
    applied = restore_partitions({partition: store}, consumer, topic, apply, layout=layout,
                                 identity=identity, idle_s=idle_s, progress=progress)  # fmt: skip
    return applied[partition]


def restore_partitions(
    stores: Mapping[int, PartitionStore],
    consumer: Consumer,
    topic: str,
    apply: Apply,
    *,
    layout: int = 1,
    identity: TopicIdentity | None = None,
    chunk: int = 10_000,
    idle_s: float = 15.0,
    poll_s: float = 0.05,
    progress: Callable[[int], None] | None = None,
) -> dict[int, int]:
    """Replay changelog ``topic`` into the store of each partition; return the number of
    records applied to each.

    ``consumer`` reads committed data only and belongs to no group that commits.
    ``identity`` is the changelog's now (None when unknown): files that recorded another
    are rebuilt at once, and every store rebuilt or kept records it. ``idle_s`` is the
    longest an end may lag or a transaction stay open: an end before a checkpoint is asked
    again for that long (for every store at once), and a partition that stops short of
    its end is left for that long before restoring goes on without it. The end of a
    transactional changelog is a commit marker, which no ``consume()`` returns: polls are
    short (``poll_s``) so that reaching it costs milliseconds, not a long poll. Files of
    another ``layout`` (the processor keeps its state another way than when it wrote them)
    are rebuilt from the changelog's start. ``progress`` hears the records applied after
    each chunk of at most ``chunk``.
    """
    reads = _plan(stores, consumer, topic, layout, identity, idle_s)
    applied = dict.fromkeys(stores, 0)
    if reads:
        applied.update(_read(reads, consumer, topic, apply, chunk=chunk, idle_s=idle_s,
                             poll_s=poll_s, progress=progress))  # fmt: skip
    return applied


@dataclass
class _Read:
    """A partition to read, from ``start`` up to ``high``, into ``tx``."""

    tx: PartitionBatch
    start: int
    high: int
    last_offset: int
    """The offset of the last record applied: the checkpoint the store records."""
    applied: int = 0
    position: int = -1
    moved: float = field(default_factory=time.monotonic)
    """When a record last came, or the position last moved."""


def _plan(stores: Mapping[int, PartitionStore], consumer: Consumer, topic: str, layout: int,
          identity: TopicIdentity | None, idle_s: float) -> dict[int, _Read]:  # fmt: skip
    """Wipe the files that may not be kept, record the changelog's identity in every store,
    and say what each partition that has something to read reads."""
    files = {p: Checkpoint.of(store) for p, store in stores.items()}
    verdicts = _judge(files, consumer, topic, layout, identity, idle_s)
    reads = {}
    for p, store in stores.items():
        kept, (verdict, low, high) = files[p], verdicts[p]
        if verdict is Verdict.KEEP:
            assert kept.offset is not None  # judged on it
            start = kept.offset + 1
            if identity is not None and kept.identity is None:
                store.bind_changelog(topic, layout, identity)
            # One offset left to read is nothing to read: a committed record is followed by
            # its commit marker, so that offset is the marker of the store's own last
            # transaction (or a record not committed).
            if start >= high - 1:
                continue
        else:
            if kept.offset is not None or kept.topic not in (None, topic):
                log.info("local state of %s[%d] is not valid (%s: checkpoint %s of %s, "
                         "changelog %d..%d of %s, layout %d, now %d): full restore", topic, p,
                         verdict.value, kept.offset, kept.identity, low, high, identity,
                         kept.layout, layout)  # fmt: skip
            store.wipe()
            store.bind_changelog(topic, layout, identity)
            start = low
            if start >= high:
                continue
        reads[p] = _Read(PartitionBatch(store), start, high, last_offset=start - 1)
    return reads


def _judge(files: Mapping[int, Checkpoint], consumer: Consumer, topic: str, layout: int,
           identity: TopicIdentity | None,
           idle_s: float) -> dict[int, tuple[Verdict, int, int]]:  # fmt: skip
    """The verdict on each partition's files, with the changelog's offsets it went by.
    Ends that lie before checkpoints are asked again, all together, for up to ``idle_s``."""
    judged: dict[int, tuple[Verdict, int, int]] = {}
    asking = sorted(files)
    deadline = time.monotonic() + idle_s
    while True:
        waited = time.monotonic() > deadline
        for p in asking:
            low, high = watermarks(consumer, TopicPartition(topic, p))
            verdict = judge(files[p], topic=topic, layout=layout, identity=identity,
                            low=low, high=high, waited=waited)  # fmt: skip
            judged[p] = verdict, low, high
        asking = [p for p in asking if judged[p][0] is Verdict.ASK_AGAIN]
        if not asking:
            return judged
        log.warning("changelog %s ends before the checkpoints of partitions %s (ends %s, "
                    "checkpoints %s): asking again", topic, asking,
                    [judged[p][2] for p in asking], [files[p].offset for p in asking])  # fmt: skip
        time.sleep(ASK_AGAIN_S)


def _read(reads: dict[int, _Read], consumer: Consumer, topic: str, apply: Apply, *,
          chunk: int, idle_s: float, poll_s: float,
          progress: Callable[[int], None] | None) -> dict[int, int]:  # fmt: skip
    """Read every partition of ``reads`` at once, each up to its end; the records applied
    to each. A partition whose position stays short of its end for ``idle_s`` is held by
    an open transaction: it is let go where it stands."""
    started = time.monotonic()
    consumer.assign([TopicPartition(topic, p, read.start) for p, read in reads.items()])
    reading = dict(reads)
    try:
        while reading:
            messages = consumer.consume(chunk, timeout=poll_s)
            touched: set[int] = set()
            for message in messages:
                if message.error() is not None:
                    log.warning("changelog read error: %s", message.error())
                    continue
                read = reading.get(message.partition() or 0)
                if read is None:  # fetched before its partition was let go
                    continue
                apply(read.tx, message.key() or b"", message.value(), message.headers())
                read.last_offset = message.offset() or 0
                read.applied += 1
                touched.add(message.partition() or 0)
            for p in touched:
                reading[p].tx.commit(reading[p].last_offset)
            if progress is not None and messages:
                progress(len(messages))
            done = _reached(reading, consumer, topic, touched, idle_s)
            if done:
                consumer.incremental_unassign([TopicPartition(topic, p) for p in done])
                for p in done:
                    read = reading.pop(p)
                    read.tx.commit(read.last_offset)
                    log.info("restored %s[%d]: %d records in %.1fs", topic, p, read.applied,
                             time.monotonic() - started)  # fmt: skip
    finally:
        consumer.unassign()
    return {p: read.applied for p, read in reads.items()}


def _reached(reading: dict[int, _Read], consumer: Consumer, topic: str, touched: set[int],
             idle_s: float) -> list[int]:  # fmt: skip
    """The partitions of ``reading`` that reached their end, or stalled before it."""
    now = time.monotonic()
    done = []
    for tp in consumer.position([TopicPartition(topic, p) for p in reading]):
        read = reading[tp.partition]
        if tp.offset != read.position or tp.partition in touched:
            read.position, read.moved = tp.offset, now
        if tp.offset >= read.high:
            done.append(tp.partition)
        elif now - read.moved > idle_s:
            log.warning("changelog %s[%d] stalled at %d before %d (an open transaction?)",
                        topic, tp.partition, tp.offset, read.high)  # fmt: skip
            done.append(tp.partition)
    return done
