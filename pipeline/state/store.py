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
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, WriteBatch

log = logging.getLogger(__name__)

_OFFSET = struct.Struct(">q")
# Metadata keys start with 0x00 so that they sort before every data key.
_CHANGELOG_OFFSET_KEY = b"\x00changelog-offset"
_CHANGELOG_TOPIC_KEY = b"\x00changelog-topic"


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
        except Exception as exc:  # rocksdict raises Exception with RocksDB's status text
            if not str(exc).startswith("Corruption"):
                raise
            log.error("state in %s is corrupt (%s): dropped, to be rebuilt from the "
                      "changelog", self.path, exc)  # fmt: skip
            shutil.rmtree(self.path, ignore_errors=True)
            self._db = _open(self.path)

    def get(self, key: bytes) -> bytes | None:
        value = self._db.get(key)
        return None if value is None else bytes(value)

    def scan(self, lower: bytes, upper: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Entries with lower <= key < upper, in key order."""
        for key, value in self._db.items(from_key=lower):
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

    def bind_changelog(self, topic: str) -> None:
        self._db.put(_CHANGELOG_TOPIC_KEY, topic.encode())

    def count(self, lower: bytes, upper: bytes) -> int:
        return sum(1 for _ in self.scan(lower, upper))

    def compact(self) -> None:
        """Compact every key range now, rather than when RocksDB gets round to it."""
        self._db.compact_range(None, None)

    def close(self) -> None:
        self._db.close()

    def wipe(self) -> None:
        """Drop the files: the changelog is the source of truth and rebuilds them."""
        self._db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = _open(self.path)


def _open(path: Path) -> Rdict:
    return Rdict(str(path), _options(), access_type=AccessType.read_write())
