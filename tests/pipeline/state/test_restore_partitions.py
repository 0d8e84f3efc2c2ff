"""Several partition stores restored at once, with one consumer, on the real broker and
real RocksDB: each read to its own end, and the waits of all shared rather than added up."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.identity import topic_identity
from jobstream._pipeline.state.partitions import PartitionStores
from jobstream._pipeline.state.recovery import restore_partitions
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.topics import Topics
from tests.pipeline.state.changelog import asked_again, identity_of, put, write_changelog
from tests.support.topics import recreate

PARTITIONS = (0, 1, 2)


def test_every_partition_is_read_to_its_own_end_at_once(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    changelog = topics.timers_changelog
    producer = clients.producer(topics.settings, transactional_id=f"{changelog}-interleaved")
    producer.init_transactions(30)
    expected: dict[int, dict[bytes, bytes]] = {p: {} for p in PARTITIONS}
    for n in range(6):
        producer.begin_transaction()
        for p in PARTITIONS[: 1 + n % 3]:  # partitions of different lengths
            for i in range(50):
                key, value = b"k%d-%02d" % (n, i), b"v%d" % p
                producer.produce(changelog, value, key, partition=p)
                expected[p][key] = value
        producer.commit_transaction(30)
    producer.begin_transaction()  # aborted: applied nowhere
    for p in PARTITIONS:
        producer.produce(changelog, b"aborted", b"never", partition=p)
    producer.abort_transaction(30)
    producer.begin_transaction()  # still open: holds partition 2's stable end back
    producer.produce(changelog, b"open", b"not yet", partition=2)
    producer.flush(30)

    stores = {p: PartitionStore(tmp_path / str(p)) for p in PARTITIONS}
    heard: list[int] = []
    try:
        applied = restore_partitions(stores, restorer, changelog, put, identity=identity_of(topics),
                                     chunk=100, progress=heard.append)  # fmt: skip
        assert applied == {p: len(expected[p]) for p in PARTITIONS}
        assert sum(heard) == sum(applied.values())
        for p, store in stores.items():
            assert dict(store.scan(b"k", b"l")) == expected[p], f"partition {p}"
            assert store.get(b"never") is None and store.get(b"not yet") is None
        # each checkpoint is its partition's own: a second restore has nothing to read
        assert restore_partitions(stores, restorer, changelog, put) == dict.fromkeys(PARTITIONS, 0)
    finally:
        producer.abort_transaction(30)
        for store in stores.values():
            store.close()


def test_ends_behind_the_checkpoints_of_several_stores_are_waited_for_once(
    topics: Topics, tmp_path: Path, restorer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    """The same changelog (same identity) lost what the checkpoints cover, for good: each
    store is rebuilt after one wait of ``idle_s``, the same wait for all."""
    here = identity_of(topics)
    stores = {}
    for p in PARTITIONS:
        write_changelog(topics, [(b"a", b"%d" % p)], partition=p)
        stores[p] = PartitionStore(tmp_path / str(p))
        stores[p].bind_changelog(topics.timers_changelog, identity=here)
        stores[p].write({b"lost": b"x"}, changelog_offset=40)
    idle_s = 5.0  # one wait: 5 s; one a partition, the fault: 15 s
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="jobstream._pipeline.state.recovery"):
        applied = restore_partitions(stores, restorer, topics.timers_changelog, put,
                                     identity=here, idle_s=idle_s)  # fmt: skip
    took = time.monotonic() - started
    assert applied == dict.fromkeys(PARTITIONS, 1)
    for p, store in stores.items():
        assert (store.get(b"lost"), store.get(b"a")) == (None, b"%d" % p)
        store.close()
    assert asked_again(caplog) and all("[0, 1, 2]" in line for line in asked_again(caplog))
    assert idle_s <= took < 2 * idle_s, f"{took:.1f} s: one wait per partition"


def test_a_state_directory_of_changelogs_made_again_is_rebuilt_at_once(
    topics: Topics, tmp_path: Path, restorer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    """What a broker whose data was wiped shows a processor: every checkpoint lies past
    the ends of changelogs that start over. Each store is rebuilt at once, without the
    15 s wait a same changelog's lagging end deserves."""
    changelog = topics.timers_changelog

    def partition_stores() -> PartitionStores:
        return PartitionStores(tmp_path / "state", changelog, lambda: restorer, put,
                               identify=lambda topic: topic_identity(
                                   topics.settings.kafka_config, topic))  # fmt: skip

    for p in PARTITIONS:
        write_changelog(topics, [(b"old-%d" % i, b"x") for i in range(20)], partition=p)
    before = partition_stores()
    before.assign(PARTITIONS)
    assert all(before.stores[p].changelog_offset == 19 for p in PARTITIONS)
    before.revoke(PARTITIONS)

    recreate(topics, [changelog])
    for p in PARTITIONS:
        write_changelog(topics, [(b"new", b"%d" % p)], partition=p)
    after = partition_stores()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="jobstream._pipeline.state.recovery"):
        after.assign(PARTITIONS)
    took = time.monotonic() - started
    for p in PARTITIONS:
        store = after.stores[p]
        assert (store.get(b"old-0"), store.get(b"new")) == (None, b"%d" % p)
        assert store.changelog_offset == 0
    assert asked_again(caplog) == []
    assert took < 5, f"{took:.1f} s to rebuild three stores of one record each"
    after.revoke(PARTITIONS)
