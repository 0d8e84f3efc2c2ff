"""Rebuild a stateful processor's stores (the timers') from its changelog, from offset zero.

The stores of one processor instance (its state directory and instance id, as
``jobstream timers`` takes them) are wiped and restored, all partitions at once, with
the runtime's own restore, from the first offset of the changelog, whatever checkpoint
the files held. Stop the instance first: RocksDB locks its files while it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import TopicPartition

from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.identity import topic_identity
from jobstream._pipeline.kafka.scan import partitions_of
from jobstream._pipeline.kafka.watermarks import watermarks
from jobstream._pipeline.runtime.options import RunnerOptions, processor_group
from jobstream._pipeline.runtime.processor import Processor
from jobstream._pipeline.state.recovery import restore_partitions
from jobstream._pipeline.state.store import PartitionStore

Progress = Callable[[int, int], None]
"""Called with (changelog records applied, records in the changelog)."""


def rebuild_stores(settings: Settings, processor: Processor[Any], options: RunnerOptions,
                   progress: Progress | None = None) -> int:  # fmt: skip
    """Wipe and restore every partition store of ``processor``; return the records applied."""
    changelog = processor.changelog
    if changelog is None:
        raise ValueError(f"{processor.name} keeps no state")
    group = processor_group(settings.topic_prefix, processor.name)
    root = options.store_root(group)
    consumer = clients.consumer(settings, f"{group}.restore")
    applied = 0
    try:
        owned = partitions_of(consumer, changelog)
        ends = [watermarks(consumer, TopicPartition(changelog, p)) for p in owned]
        total = sum(high - low for low, high in ends)

        def step(count: int) -> None:
            nonlocal applied
            applied += count
            if progress is not None:
                progress(applied, total)

        stores: dict[int, PartitionStore] = {}
        try:
            for p in owned:
                stores[p] = PartitionStore(root / str(p))
                stores[p].wipe()
            identity = topic_identity(settings.kafka_config, changelog)
            restore_partitions(stores, consumer, changelog, processor.restore, identity=identity,
                               layout=processor.state_layout, progress=step)  # fmt: skip
        finally:
            for store in stores.values():
                store.close()
    finally:
        consumer.close()
    if progress is not None:
        progress(applied, total)
    return applied
