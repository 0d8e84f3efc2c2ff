"""A partition batch's scans see its pending changes over the store, in key order."""

from __future__ import annotations

import random
from pathlib import Path

from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.state.store import PartitionStore


def test_a_scan_merges_pending_puts_and_deletes_with_the_store(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    store.write({b"a1": b"s", b"a3": b"s", b"a5": b"s", b"b1": b"s"}, changelog_offset=1)
    tx = PartitionBatch(store)
    tx.put(b"a2", b"p")
    tx.put(b"a3", b"p")  # over a stored key
    tx.delete(b"a5")
    tx.put(b"a9", b"p")
    tx.delete(b"a9")  # put, then deleted in the same transaction
    tx.put(b"a0", b"p")
    assert list(tx.scan(b"a1", b"b")) == [(b"a1", b"s"), (b"a2", b"p"), (b"a3", b"p")]
    tx.commit(changelog_offset=2)
    assert list(PartitionBatch(store).scan(b"a", b"c")) == [
        (b"a0", b"p"),
        (b"a1", b"s"),
        (b"a2", b"p"),
        (b"a3", b"p"),
        (b"b1", b"s"),
    ]
    store.close()


def test_scans_between_writes_agree_with_a_plain_model(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    model = {f"k{i:03}".encode(): b"s" for i in range(0, 200, 3)}
    store.write(dict(model), changelog_offset=1)
    tx = PartitionBatch(store)
    rng = random.Random(7)
    for _ in range(2000):
        key = f"k{rng.randrange(200):03}".encode()
        if rng.random() < 0.3:
            tx.delete(key)
            model.pop(key, None)
        else:
            tx.put(key, b"p")
            model[key] = b"p"
        low, high = sorted(f"k{rng.randrange(210):03}".encode() for _ in range(2))
        assert list(tx.scan(low, high)) == sorted((k, v) for k, v in model.items()
                                                  if low <= k < high)  # fmt: skip
    tx.rollback()
    assert list(tx.scan(b"k", b"l")) == list(store.scan(b"k", b"l"))
    store.close()
