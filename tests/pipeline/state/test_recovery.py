"""Restoring a partition store from its changelog on the real broker and real RocksDB."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from pipeline.kafka import clients
from pipeline.state.partitions import PartitionStores
from pipeline.state.recovery import restore
from pipeline.state.store import PartitionStore
from pipeline.state.transaction import PartitionTransaction
from pipeline.topics import Topics

PARTITION = 1


def write_changelog(topics: Topics, records: list[tuple[bytes, bytes]]) -> int:
    """Commit ``records`` to one changelog partition; the offset of the last one."""
    writer = f"{topics.timers_changelog}-writer"
    producer = clients.producer(topics.settings, transactional_id=writer)
    producer.init_transactions(30)
    delivered: list[int] = []
    producer.begin_transaction()
    for key, value in records:
        producer.produce(topics.timers_changelog, value, key, partition=PARTITION,
                         on_delivery=lambda err, msg: delivered.append(msg.offset()))  # fmt: skip
    producer.commit_transaction(30)
    return max(delivered)


def put(tx: PartitionTransaction, key: bytes, value: bytes | None) -> None:
    if value is None:
        tx.delete(key)
    else:
        tx.put(key, value)


@pytest.fixture
def restorer(topics: Topics) -> Iterator[Consumer]:
    consumer = clients.consumer(topics.settings, f"{topics.settings.topic_prefix}restore")
    yield consumer
    consumer.close()


def test_a_checkpoint_ahead_of_the_end_waits_for_the_end_instead_of_wiping(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    last = write_changelog(topics, [(b"a", b"1"), (b"b", b"2")])
    store = PartitionStore(tmp_path / "p")
    store.bind_changelog(topics.timers_changelog)
    # The store has seen committed records that the end read first does not show yet
    # (a leader back from a pause answering with its old end): the checkpoint lies ahead.
    store.write({b"a": b"1", b"b": b"2", b"seen": b"only here"}, changelog_offset=last + 2)
    late = threading.Timer(1.0, write_changelog, (topics, [(b"c", b"3"), (b"d", b"4")]))
    late.start()
    try:
        applied = restore(store, restorer, topics.timers_changelog, PARTITION, put, idle_s=15)
    finally:
        late.join()
    assert store.get(b"seen") == b"only here", "the store was not wiped"
    assert store.get(b"d") == b"4"
    assert applied <= 2, "only what follows the checkpoint was read"
    store.close()


def test_a_changelog_that_stays_behind_the_checkpoint_sends_the_store_to_a_full_restore(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    last = write_changelog(topics, [(b"a", b"1")])
    store = PartitionStore(tmp_path / "p")
    store.bind_changelog(topics.timers_changelog)
    store.write({b"stale": b"x"}, changelog_offset=last + 100)
    assert restore(store, restorer, topics.timers_changelog, PARTITION, put, idle_s=1) == 1
    assert (store.get(b"stale"), store.get(b"a")) == (None, b"1")
    store.close()


def test_a_restore_that_fails_releases_the_store_for_the_next_attempt(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    write_changelog(topics, [(b"a", b"1")])

    def broken(tx: PartitionTransaction, key: bytes, value: bytes | None) -> None:
        raise RuntimeError("the broker went away mid-restore")

    stores = PartitionStores(tmp_path / "state", topics.timers_changelog, lambda: restorer, broken)
    with pytest.raises(RuntimeError):
        stores.assign([PARTITION])
    assert stores.stores == {}
    stores.apply = put
    stores.assign([PARTITION])  # would fail on the RocksDB lock of an unclosed store
    assert stores.stores[PARTITION].get(b"a") == b"1"
    stores.revoke([PARTITION])


def test_files_of_another_layout_are_rebuilt_from_the_changelog_start(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    last = write_changelog(topics, [(b"a", b"1"), (b"b", b"2")])
    store = PartitionStore(tmp_path / "p")
    store.bind_changelog(topics.timers_changelog)  # written before layouts were recorded
    store.write({b"a": b"1", b"b": b"2"}, changelog_offset=last)

    def derive(tx: PartitionTransaction, key: bytes, value: bytes | None) -> None:
        put(tx, key, value)
        put(tx, b"index-" + key, b"")  # what layout 2 keeps beside each record

    assert restore(store, restorer, topics.timers_changelog, PARTITION, derive, layout=2) == 2
    assert (store.get(b"index-a"), store.get(b"index-b"), store.layout) == (b"", b"", 2)
    assert restore(store, restorer, topics.timers_changelog, PARTITION, derive, layout=2) == 0
    store.close()


def test_a_committed_batch_records_the_offset_of_its_last_changelog_record(
    topics: Topics, restorer: Consumer, tmp_path: Path
) -> None:
    stores = PartitionStores(tmp_path / "state", topics.timers_changelog, lambda: restorer, put)
    stores.assign([PARTITION])
    producer = clients.producer(topics.settings, transactional_id=f"{topics.timers_changelog}-log")
    producer.init_transactions(30)
    batches = [[(b"a", b"1"), (b"b", None), (b"c", b"3")], [(b"d", b"4"), (b"a", None)]]
    # a fresh partition: records 0-2 and the commit marker at 3, then records 4-5
    for batch, last_offset in zip(batches, (2, 5), strict=True):
        producer.begin_transaction()
        stores.log(producer, PARTITION, batch)
        producer.flush(30)  # serves the delivery reports, as the commit order does
        producer.commit_transaction(30)
        tx = PartitionTransaction(stores.stores[PARTITION])
        for key, value in batch:
            put(tx, key, value)
        stores.commit({PARTITION: tx})
        assert stores.stores[PARTITION].changelog_offset == last_offset
    stores.close()
