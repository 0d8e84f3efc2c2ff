"""What the views take from jobs.status, now the status store's changelog (docs/adr/0014):
a job's status; never the store's own records; no tombstone (a purge's, or a grow's marked
moved, read before or after the job's record on its new partition) removes a job."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobstream._connectors.views import ViewStore, ViewUpdater
from jobstream._pipeline.config import Settings
from jobstream._pipeline.growth.layout import LAYOUT_KEY, fresh
from jobstream._pipeline.serde import encode_status
from jobstream._pipeline.status.record import INTERNAL, MOVED, RECORD_HEADER, internal_key
from jobstream._pipeline.topics import Topics
from tests.connectors.views.records import T0, status, submitted

STATUS = Topics(Settings()).status


class Message:
    """A jobs.status record as confluent-kafka's consumer hands it."""

    def __init__(self, key: bytes, value: bytes | None, headers: object, offset: int) -> None:
        self._key, self._value, self._headers, self._offset = key, value, headers, offset

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> object:
        return self._headers

    def topic(self) -> str:
        return STATUS

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


def fold(store: ViewStore, updater: ViewUpdater, *messages: Message) -> None:
    batch = store.batch()
    for message in messages:
        updater._status(batch, message)  # type: ignore[arg-type]
    batch.commit()


@pytest.mark.parametrize("tombstone_first", [False, True])
def test_the_views_fold_statuses_and_skip_internal_records_and_tombstones(
    tmp_path: Path, tombstone_first: bool
) -> None:
    store = ViewStore(tmp_path / "views")
    store.ensure_layout()
    updater = ViewUpdater(Settings(), store, retention_ms=86_400_000)
    job = submitted(at_ms=T0)
    running = Message(job.job_id.encode(), encode_status(status(job, "RUNNING", at_ms=T0 + 5)),
                      [(RECORD_HEADER, b"{}")], 1)  # fmt: skip
    moved = Message(job.job_id.encode(), None, list(MOVED), 2)
    layout = Message(internal_key(LAYOUT_KEY), fresh(6).encode(), list(INTERNAL), 3)
    fold(store, updater, *((moved, running) if tombstone_first else (running, moved)), layout)
    doc = store.doc(job.job_id)
    assert doc is not None and doc["state"] == "RUNNING"
    assert updater.stats.skipped == 0, "the layout is skipped, not reported as unreadable"
    assert store.doc("\x00h") is None
    fold(store, updater, Message(job.job_id.encode(), None, None, 4))  # a purge's
    kept = store.doc(job.job_id)
    assert kept is not None and kept["state"] == "RUNNING", "the view's own retention decides"
