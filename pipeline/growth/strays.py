"""A record that lands on a partition other than its key's home under the live count: a
producer whose metadata still has the old count wrote it. It is forwarded to its home,
unprocessed, in the transaction of its offset, so it is read there after what that home
was handed (docs/adr/0011-partitions-that-grow.md).

The copy carries :data:`FORWARDED_HEADER`. A reader of every partition (the retry router,
the views) has read the original already and passes the copy over (:func:`is_forwarded`):
a failure forwarded is routed once, a history shows each event once.

Pure: no Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobstream._pipeline.kafka.headers import header_pairs
from jobstream._pipeline.partitioning import java_partition
from jobstream._pipeline.runtime.processor import Output, Record

FORWARDED_HEADER = "jobstream.forwarded"
"""On a forwarded copy: ``<topic>/<partition>/<offset>`` of the original."""


def forward_stray(record: Record, partition: int, counts: Mapping[str, int]) -> Output | None:
    """``record`` (read on ``partition``) forwarded to its key's home under its topic's live
    count in ``counts``; None for a record at home, with no key, or of a topic not counted."""
    key, topic = record.key(), record.topic()
    count = counts.get(topic or "")
    if key is None or count is None or topic is None:
        return None
    home = java_partition(key, count)
    if home == partition:
        return None
    origin = f"{topic}/{partition}/{record.offset()}".encode()
    headers = [*header_pairs(record), (FORWARDED_HEADER, origin)]
    return Output(topic, key, record.value() or b"", home, headers)


def is_forwarded(record: Record) -> bool:
    """Whether ``record`` is a forwarded copy (its original is on another partition)."""
    return any(name == FORWARDED_HEADER for name, _ in header_pairs(record))
