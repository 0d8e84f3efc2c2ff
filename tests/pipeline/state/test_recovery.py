"""Restoring a partition store from its changelog on the real broker and real RocksDB."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from jobstream._pipeline.kafka import clients
from jobstream._pipeline.kafka.headers import Headers
from jobstream._pipeline.kafka.identity import TopicIdentity
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.partitions import PartitionStores
from jobstream._pipeline.state.recovery import restore
from jobstream._pipeline.state.store import PartitionStore
from jobstream._pipeline.topics import Topics
from tests.pipeline.state.changelog import PARTITION, asked_again, identity_of, put, write_changelog
from tests.support.topics import recreate


def stored(tmp_path: Path, topics: Topics, data: dict[bytes, bytes], offset: int,
           identity: TopicIdentity | None = None) -> PartitionStore:  # fmt: skip
    """A store bound to the timers' changelog (of ``identity``; None: files written before
    identities were recorded) that holds ``data`` as of changelog offset ``offset``."""
    store = PartitionStore(tmp_path / "p")
    store.bind_changelog(topics.timers_changelog, identity=identity)
    store.write(data, changelog_offset=offset)
    return store


@pytest.mark.parametrize("recorded", ["identity recorded", "files from before identities"])
def test_a_checkpoint_ahead_of_the_end_waits_for_the_end_instead_of_wiping(
    topics: Topics, tmp_path: Path, restorer: Consumer, recorded: str
) -> None:
    last = write_changelog(topics, [(b"a", b"1"), (b"b", b"2")])
    here = identity_of(topics)
    # The store has seen committed records that the end read first does not show yet
    # (a leader back from a pause answering with its old end): the checkpoint lies ahead.
    # The changelog is the same one (same cluster, same topic id): that is no reason to wipe.
    store = stored(tmp_path, topics, {b"a": b"1", b"b": b"2", b"seen": b"only here"}, last + 2,
                   identity=here if recorded == "identity recorded" else None)
    late = threading.Timer(1.0, write_changelog, (topics, [(b"c", b"3"), (b"d", b"4")]))
    late.start()
    try:
        applied = restore(store, restorer, topics.timers_changelog, PARTITION, put,
                          identity=here, idle_s=15)  # fmt: skip
    finally:
        late.join()
    assert store.get(b"seen") == b"only here", "the store was not wiped"
    assert store.get(b"d") == b"4"
    assert applied <= 2, "only what follows the checkpoint was read"
    assert store.changelog_identity == here
    store.close()


def test_a_changelog_that_stays_behind_the_checkpoint_sends_the_store_to_a_full_restore(
    topics: Topics, tmp_path: Path, restorer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    last = write_changelog(topics, [(b"a", b"1")])
    here = identity_of(topics)
    store = stored(tmp_path, topics, {b"stale": b"x"}, last + 100, identity=here)
    with caplog.at_level(logging.WARNING, logger="jobstream._pipeline.state.recovery"):
        assert restore(store, restorer, topics.timers_changelog, PARTITION, put,
                       identity=here, idle_s=1) == 1  # fmt: skip
    assert asked_again(caplog), "the same changelog's end was asked again before wiping"
    assert (store.get(b"stale"), store.get(b"a")) == (None, b"1")
    store.close()


def test_a_checkpoint_of_another_cluster_is_rebuilt_at_once_not_waited_for(
    topics: Topics, tmp_path: Path, restorer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    write_changelog(topics, [(b"a", b"1")])
    here = identity_of(topics)
    theirs = TopicIdentity(cluster_id="another", topic_id=here.topic_id)
    store = stored(tmp_path, topics, {b"theirs": b"x"}, 19, identity=theirs)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="jobstream._pipeline.state.recovery"):
        applied = restore(store, restorer, topics.timers_changelog, PARTITION, put,
                          identity=here, idle_s=15)  # fmt: skip
    took = time.monotonic() - started
    assert (applied, store.get(b"theirs"), store.get(b"a")) == (1, None, b"1")
    assert store.changelog_identity == here
    assert asked_again(caplog) == [], "another cluster's checkpoint says nothing of this end"
    assert took < 12, f"restored in {took:.1f} s: waited 15 s for an end that will not come"
    store.close()


def test_files_of_a_changelog_made_again_are_rebuilt_though_their_offsets_fit_it(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    old = write_changelog(topics, [(b"stale", b"x")])
    store = stored(tmp_path, topics, {b"stale": b"x"}, old, identity=identity_of(topics))
    recreate(topics, [topics.timers_changelog])
    # Records 0-2 and the commit marker at 3: the old checkpoint (0) lies within, and
    # offsets alone would keep the files and read on after it.
    write_changelog(topics, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    here = identity_of(topics)
    assert here.topic_id != store.changelog_identity.topic_id  # type: ignore[union-attr]
    assert restore(store, restorer, topics.timers_changelog, PARTITION, put, identity=here) == 3
    assert [store.get(key) for key in (b"stale", b"a", b"b", b"c")] == [None, b"1", b"2", b"3"]
    assert (store.changelog_offset, store.changelog_identity) == (2, here)
    store.close()


def test_files_from_before_identities_were_recorded_are_kept_and_learn_their_identity(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    last = write_changelog(topics, [(b"a", b"1")])
    store = stored(tmp_path, topics, {b"a": b"1", b"kept": b"yes"}, last)
    here = identity_of(topics)
    assert restore(store, restorer, topics.timers_changelog, PARTITION, put, identity=here) == 0
    assert (store.get(b"kept"), store.changelog_offset) == (b"yes", last)
    assert store.changelog_identity == here
    # a cluster that does not tell its ids leaves the recorded identity as it was
    assert restore(store, restorer, topics.timers_changelog, PARTITION, put, identity=None) == 0
    assert (store.get(b"kept"), store.changelog_identity) == (b"yes", here)
    store.close()


def test_a_restore_that_fails_releases_the_store_for_the_next_attempt(
    topics: Topics, tmp_path: Path, restorer: Consumer
) -> None:
    write_changelog(topics, [(b"a", b"1")])

    def broken(tx: PartitionBatch, key: bytes, value: bytes | None, headers: Headers) -> None:
        raise RuntimeError("the broker went away mid-restore")

    stores = PartitionStores(tmp_path / "state", topics.timers_changelog, lambda: restorer, broken,
                             identify=lambda topic: None)  # fmt: skip
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
    # written before layouts were recorded
    store = stored(tmp_path, topics, {b"a": b"1", b"b": b"2"}, last)

    def derive(tx: PartitionBatch, key: bytes, value: bytes | None, headers: Headers) -> None:
        put(tx, key, value)
        put(tx, b"index-" + key, b"")  # what layout 2 keeps beside each record

    assert restore(store, restorer, topics.timers_changelog, PARTITION, derive, layout=2) == 2
    assert (store.get(b"index-a"), store.get(b"index-b"), store.layout) == (b"", b"", 2)
    assert restore(store, restorer, topics.timers_changelog, PARTITION, derive, layout=2) == 0
    store.close()


def test_a_committed_batch_records_the_offset_of_its_last_changelog_record(
    topics: Topics, restorer: Consumer, tmp_path: Path
) -> None:
    stores = PartitionStores(tmp_path / "state", topics.timers_changelog, lambda: restorer, put,
                             identify=lambda topic: None)  # fmt: skip
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
        tx = PartitionBatch(stores.stores[PARTITION])
        for key, value in batch:
            put(tx, key, value)
        stores.commit({PARTITION: tx})
        assert stores.stores[PARTITION].changelog_offset == last_offset
    stores.close()
