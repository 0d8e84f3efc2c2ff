"""The partition store on real RocksDB files: corrupt files are dropped, a lock is not,
and RocksDB's failures are StoreErrors naming the store (the runner restores on them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._pipeline.errors import StoreError
from jobstream._pipeline.state.store import PartitionStore


def test_corrupt_files_are_dropped_and_the_store_opens_empty(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    store.write({b"k": b"v"}, changelog_offset=7)
    store.close()
    for path in (tmp_path / "p0").iterdir():  # scribble over every file, as a bad disk would
        if path.is_file() and path.name != "LOCK":
            path.write_bytes(b"\xff" * max(1, path.stat().st_size))
    reopened = PartitionStore(tmp_path / "p0")
    assert (reopened.get(b"k"), reopened.changelog_offset) == (None, None)
    reopened.write({b"k": b"again"}, changelog_offset=1)
    assert reopened.get(b"k") == b"again"
    reopened.close()


def test_a_store_held_open_is_refused_not_dropped(tmp_path: Path) -> None:
    held = PartitionStore(tmp_path / "p0")
    held.write({b"k": b"v"}, changelog_offset=3)
    with pytest.raises(StoreError, match=f"state in {tmp_path / 'p0'}: .*lock"):
        PartitionStore(tmp_path / "p0")
    assert held.get(b"k") == b"v"
    held.close()


def test_a_store_that_cannot_be_opened_is_a_store_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "p0").write_bytes(b"a file where the store's folder should be")
    with pytest.raises(StoreError, match=f"state in {tmp_path / 'p0'}: File exists"):
        PartitionStore(tmp_path / "p0")


def test_a_scan_stops_at_its_upper_bound_past_deleted_keys(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    store.write({b"b1": b"x", b"b1z": b"y", **{b"j%05d" % i: b"v" for i in range(100)}}, 1)
    store.write({b"j%05d" % i: None for i in range(100)}, 2)
    assert list(store.scan(b"b1", b"b1z")) == [(b"b1", b"x")]
    assert list(store.scan(b"b2", b"b2\xff")) == []
    assert list(store.scan(b"a", b"z")) == [(b"b1", b"x"), (b"b1z", b"y")]
    store.close()


def test_a_secondary_reads_what_the_writer_committed_once_it_catches_up(tmp_path: Path) -> None:
    writer = PartitionStore(tmp_path / "p0")
    writer.write({b"a": b"1", b"gone": b"x"}, changelog_offset=None)
    reader = PartitionStore.secondary(tmp_path / "p0", tmp_path / "reader")
    assert reader.get(b"a") == b"1"
    writer.write({b"b": b"2", b"gone": None}, changelog_offset=None)
    assert reader.get(b"b") is None, "a secondary sees nothing new before it catches up"
    reader.catch_up()
    assert list(reader.scan(b"", b"\xff")) == [(b"a", b"1"), (b"b", b"2")]
    # flushed and compacted files too, not only the writer's log
    writer.write({b"k%06d" % n: b"v" * 100 for n in range(50_000)}, changelog_offset=None)
    writer.compact()
    reader.catch_up()
    assert reader.count(b"k", b"l") == 50_000
    reader.close()
    writer.close()
