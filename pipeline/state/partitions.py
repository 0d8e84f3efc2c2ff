"""The stores of the partitions a stateful processor owns, and their changelog.

Assigned partitions are opened and restored from the changelog; revoked ones are
closed. Changelog records go out through :meth:`PartitionStores.log`, whose delivery
reports give each partition the offset its store records when the batch commits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Message, Producer

from jobstream._pipeline.errors import StoreError
from jobstream._pipeline.kafka.commit import send
from jobstream._pipeline.kafka.identity import TopicIdentity
from jobstream._pipeline.state.batch import ChangelogRecord, PartitionBatch
from jobstream._pipeline.state.recovery import Apply, restore_partitions
from jobstream._pipeline.state.store import PartitionStore

log = logging.getLogger(__name__)


class PartitionStores:
    def __init__(self, root: Path, changelog: str, restorer: Callable[[], Consumer],
                 apply: Apply, layout: int = 1, *,
                 identify: Callable[[str], TopicIdentity | None]) -> None:  # fmt: skip
        """``restorer`` makes the consumer that reads the changelog (committed data only,
        in no group that commits); :meth:`renew_restorer` replaces it after a fault.
        ``identify`` tells the changelog's identity now (None when the cluster does not
        say): files of another are rebuilt without waiting."""
        self.root = root
        self.changelog = changelog
        self._new_restorer = restorer
        self.restorer = restorer()
        self.apply = apply
        self.layout = layout
        self.identify = identify
        self.stores: dict[int, PartitionStore] = {}
        self._delivered: dict[int, int] = {}

    def assign(self, partitions: Iterable[int]) -> None:
        """Open the stores of the partitions not held yet and restore them all at once."""
        opened: dict[int, PartitionStore] = {}
        try:
            for p in sorted(set(partitions) - set(self.stores)):
                opened[p] = PartitionStore(self.root / str(p))
            if opened:
                identity = self.identify(self.changelog)
                restore_partitions(opened, self.restorer, self.changelog, self.apply,
                                   layout=self.layout, identity=identity)  # fmt: skip
        except BaseException:  # their files stay locked until closed
            for store in opened.values():
                store.close()
            raise
        self.stores.update(opened)

    def revoke(self, partitions: Iterable[int]) -> None:
        for p in set(partitions):
            store = self.stores.pop(p, None)
            if store is None:
                continue
            try:
                store.close()
            except StoreError as exc:  # a failed disk: the next owner restores anyway
                log.warning("closing a failed store: %s", exc)

    def close(self) -> None:
        self.revoke(list(self.stores))
        self.restorer.close()

    def renew_restorer(self) -> None:
        """A new changelog consumer, with fresh metadata and connections."""
        try:
            self.restorer.close()
        except (KafkaException, RuntimeError) as exc:  # the broker is gone, or closed already
            log.debug("restore consumer close: %s", exc)
        self.restorer = self._new_restorer()

    def log(self, producer: Producer, partition: int, records: Iterable[ChangelogRecord]) -> None:
        """Produce one partition's changelog records of a transaction (with their headers,
        when a record has any).

        Only the last record asks for its delivery report: an idempotent producer
        delivers one partition's records in order, so the last one's offset is the
        highest, the one the store records; a report per record cost a Python callback
        each (about 0.3-2 µs of CPU, two to four records a job).
        """
        last: ChangelogRecord | None = None
        for record in records:
            if last is not None:
                _send(producer, self.changelog, last, partition)
            last = record
        if last is not None:
            _send(producer, self.changelog, last, partition, self._on_delivery)

    def commit(self, transactions: dict[int, PartitionBatch]) -> None:
        """After the Kafka commit: write each store with the changelog offset it reached."""
        for p, tx in transactions.items():
            tx.commit(self._delivered.get(p))

    def _on_delivery(self, err: object, message: Message) -> None:
        if err is None:
            p, offset = message.partition() or 0, message.offset() or 0
            self._delivered[p] = max(offset, self._delivered.get(p, -1))


def _send(producer: Producer, topic: str, record: ChangelogRecord, partition: int,
          on_delivery: Callable[[object, Message], None] | None = None) -> None:  # fmt: skip
    extra: dict[str, object] = {} if on_delivery is None else {"on_delivery": on_delivery}
    if len(record) == 3 and record[2]:  # confluent-kafka takes a list (or dict), not a tuple
        extra["headers"] = list(record[2])
    send(producer, topic, record[1], record[0], partition=partition, **extra)
