"""The counters by owner, type and state kept beside the documents, on real RocksDB files."""

from __future__ import annotations

from pathlib import Path

from jobstream._connectors.views import SUBMITTED, ViewStore, counts, layout
from tests.connectors.views.records import T0, fold, status, submitted


def test_counts_move_with_the_state_per_owner_and_type(store: ViewStore) -> None:
    a1, a2 = submitted("acme", at_ms=T0), submitted("acme", "image.render", at_ms=T0 + 1)
    b1 = submitted("bolt", at_ms=T0 + 2)
    fold(store, a1, a2, b1, status(a1, "RUNNING", at_ms=T0 + 5))
    mine = counts(store, "acme")
    assert mine.by_state == {SUBMITTED: 1, "RUNNING": 1} and mine.total == 2
    assert mine.by_type == {"data.process": {"RUNNING": 1}, "image.render": {SUBMITTED: 1}}
    assert counts(store).by_state == {SUBMITTED: 2, "RUNNING": 1}
    # one batch moving a job twice, and a status seen again, count it once
    fold(store, status(a1, "SUCCEEDED", at_ms=T0 + 9), status(a2, "QUEUED", at_ms=T0 + 6),
         status(a2, "RUNNING", at_ms=T0 + 7), status(a1, "SUCCEEDED", at_ms=T0 + 9))  # fmt: skip
    assert counts(store, "acme").by_state == {"SUCCEEDED": 1, "RUNNING": 1}
    assert counts(store, "bolt").by_state == {SUBMITTED: 1}


def test_a_purged_job_leaves_the_counts(store: ViewStore) -> None:
    done, running = submitted("acme", at_ms=T0), submitted("acme", at_ms=T0 + 1)
    fold(store, done, running, status(done, "SUCCEEDED", at_ms=T0 + 10),
         status(running, "RUNNING", at_ms=T0 + 10))  # fmt: skip
    batch = store.batch()
    assert batch.purge(before_ms=T0 + 100) == 1
    batch.commit()
    assert counts(store).by_state == {"RUNNING": 1}


def test_a_batch_names_the_documents_it_changed(store: ViewStore) -> None:
    job = submitted("acme", at_ms=T0)
    batch = store.batch()
    batch.submitted(job)
    batch.status(status(job, "QUEUED", at_ms=T0 + 5))
    assert [doc["state"] for doc in batch.updated.values()] == ["QUEUED"]
    batch.commit()
    again = store.batch()
    again.status(status(job, "QUEUED", at_ms=T0 + 5))
    assert again.updated == {}


def test_views_of_an_older_layout_are_wiped_to_be_read_again(tmp_path: Path) -> None:
    old = ViewStore(tmp_path / "views")
    batch = old.batch()
    batch.submitted(submitted("acme", at_ms=T0))
    batch.offset("jobs.intake", 0, 1)
    old.db.write(batch.changes, None)  # as a version without counters wrote them
    count = layout.count_key({"owner": "acme", "job_type": "data.process", "state": SUBMITTED})
    old.db.write({layout.LAYOUT: None, count: None}, None)
    assert old.ensure_layout() is True
    assert old.offsets() == {} and counts(old).total == 0
    assert old.ensure_layout() is False
    batch = old.batch()
    batch.submitted(submitted("acme", at_ms=T0))
    batch.commit()
    assert old.ensure_layout() is False and counts(old).total == 1
    old.close()
