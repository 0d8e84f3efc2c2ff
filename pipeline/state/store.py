"""A bytes store per partition on RocksDB, and the changelog offset it reflects.

Data and the changelog offset move together: :meth:`PartitionStore.write` applies one
rocksdict ``WriteBatch`` holding both, so after a crash the files reflect a prefix of
the changelog and recovery resumes right after the recorded offset.
"""

from __future__ import annotations

import logging
import shutil
import struct
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, ReadOptions, WriteBatch

from jobstream._pipeline.errors import StoreError
from jobstream._pipeline.kafka.identity import TopicIdentity

log = logging.getLogger(__name__)

_OFFSET = struct.Struct(">q")
# Metadata keys start with 0x00 so that they sort before every data key.
_CHANGELOG_OFFSET_KEY = b"\x00changelog-offset"
_CHANGELOG_TOPIC_KEY = b"\x00changelog-topic"
_CHANGELOG_IDENTITY_KEY = b"\x00changelog-identity"
_LAYOUT_KEY = b"\x00layout"


def _options() -> Options:
    # raw_mode: keys and values are plain bytes, so byte order is key order.
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_max_background_jobs(2)
    options.set_write_buffer_size(16 * 1024 * 1024)
    return options


class PartitionStore:
    """The RocksDB files of one partition."""

    def __init__(self, path: Path) -> None:
        """Open the files at ``path``; files RocksDB finds corrupt are dropped and the store
        opened empty, for restore to rebuild it whole from the changelog."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = _open(self.path)
        except StoreError as exc:
            if not str(exc.__cause__).startswith("Corruption"):
                raise
            log.error("state in %s is corrupt (%s): dropped, to be rebuilt from the "
                      "changelog", self.path, exc.__cause__)  # fmt: skip
            shutil.rmtree(self.path, ignore_errors=True)
            self._db = _open(self.path)

    @classmethod
    def secondary(cls, path: Path, own_dir: Path) -> PartitionStore:
        """The files at ``path``, which another process writes, opened for reading only as
        a RocksDB secondary instance (its own info files in ``own_dir``): it sees what the
        writer had when it opened and, after each :meth:`catch_up`, what it has since."""
        store = cls.__new__(cls)
        store.path = Path(path)
        own_dir.mkdir(parents=True, exist_ok=True)
        with _io(store.path):
            store._db = Rdict(str(path), _options(),
                              access_type=AccessType.secondary(str(own_dir)))  # fmt: skip
        return store

    def catch_up(self) -> None:
        """A secondary instance: read what the writer has written since (its WAL and new
        files); a store opened for writing is always up to date."""
        with _io(self.path):
            self._db.try_catch_up_with_primary()

    def get(self, key: bytes) -> bytes | None:
        value = self._db.get(key)
        return None if value is None else bytes(value)

    def scan(self, lower: bytes, upper: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Entries with lower <= key < upper, in key order.

        The iterator is bounded by ``upper`` too: unbounded, RocksDB skips every deleted key
        after the range until it finds a live one, and an empty range after ten thousand
        fired timers costs ten thousand steps.
        """
        bounds = ReadOptions()
        bounds.set_iterate_upper_bound(upper)
        for key, value in self._db.items(from_key=lower, read_opt=bounds):
            if key >= upper:  # type: ignore[operator]
                return
            yield key, value  # type: ignore[misc]

    def write(self, changes: Mapping[bytes, bytes | None], changelog_offset: int | None) -> None:
        """Apply puts (value) and deletes (None), and the changelog offset, atomically."""
        batch = WriteBatch(raw_mode=True)
        for key, value in changes.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        if changelog_offset is not None:
            batch.put(_CHANGELOG_OFFSET_KEY, _OFFSET.pack(changelog_offset))
        with _io(self.path):
            self._db.write(batch)

    @property
    def changelog_offset(self) -> int | None:
        """Offset of the last changelog record reflected in the files, or None."""
        raw = self._db.get(_CHANGELOG_OFFSET_KEY)
        return None if raw is None else int(_OFFSET.unpack(raw)[0])

    @property
    def changelog_topic(self) -> str | None:
        raw = self._db.get(_CHANGELOG_TOPIC_KEY)
        return None if raw is None else bytes(raw).decode()

    @property
    def layout(self) -> int:
        """The version of the way the processor lays its state out in these files (1 for
        files written before versions were recorded)."""
        raw = self._db.get(_LAYOUT_KEY)
        return 1 if raw is None else int(_OFFSET.unpack(raw)[0])

    @property
    def changelog_identity(self) -> TopicIdentity | None:
        """The cluster and topic ids of the changelog the checkpoint belongs to (None for
        files written before identities were recorded, or when the cluster did not tell)."""
        raw = self._db.get(_CHANGELOG_IDENTITY_KEY)
        return None if raw is None else TopicIdentity.decode(bytes(raw))

    def bind_changelog(self, topic: str, layout: int = 1,
                       identity: TopicIdentity | None = None) -> None:  # fmt: skip
        """Record which changelog (by name, and by identity when known) the files follow
        and the layout they keep, in one write."""
        batch = WriteBatch(raw_mode=True)
        batch.put(_CHANGELOG_TOPIC_KEY, topic.encode())
        batch.put(_LAYOUT_KEY, _OFFSET.pack(layout))
        if identity is None:
            batch.delete(_CHANGELOG_IDENTITY_KEY)
        else:
            batch.put(_CHANGELOG_IDENTITY_KEY, identity.encode())
        with _io(self.path):
            self._db.write(batch)

    def estimated_keys(self) -> int:
        """RocksDB's estimate of the keys held (cheap: no scan)."""
        return int(self._db.property_int_value("rocksdb.estimate-num-keys") or 0)

    def count(self, lower: bytes, upper: bytes) -> int:
        return sum(1 for _ in self.scan(lower, upper))

    def compact(self) -> None:
        """Compact every key range now, rather than when RocksDB gets round to it."""
        self._db.compact_range(None, None)

    def close(self) -> None:
        with _io(self.path):
            self._db.close()

    def wipe(self) -> None:
        """Drop the files: the changelog is the source of truth and rebuilds them."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = _open(self.path)


def _open(path: Path) -> Rdict:
    with _io(path):
        return Rdict(str(path), _options(), access_type=AccessType.read_write())


@contextmanager
def _io(path: Path) -> Iterator[None]:
    """RocksDB's failures (rocksdict raises Exception with RocksDB's status text, such as
    "IO error: No space left on device") as a StoreError naming the store."""
    try:
        yield
    except Exception as exc:
        raise StoreError(f"state in {path}: {exc}") from exc
