"""What the API holds of the jobs it accepted until its views have read them (no broker)."""

from __future__ import annotations

from jobstream._connectors.api.pending import Pending
from tests.connectors.views.records import submitted


def test_a_held_submission_reads_as_a_submitted_document_until_it_expires() -> None:
    pending = Pending(ttl_s=600)
    record = submitted("acme", at_ms=1_800_000_000_000)
    pending.add(record)
    doc = pending.get(record["job_id"])
    assert doc is not None
    assert (doc["job_id"], doc["owner"], doc["state"]) == (record["job_id"], "acme", "SUBMITTED")
    pending.discard(record["job_id"])
    assert pending.get(record["job_id"]) is None and len(pending) == 0

    expired = Pending(ttl_s=-1)
    expired.add(record)
    assert expired.get(record["job_id"]) is None and len(expired) == 0


def test_past_its_capacity_the_oldest_is_dropped_first() -> None:
    pending = Pending(capacity=2)
    records = [submitted("acme", at_ms=1_800_000_000_000 + n) for n in range(3)]
    for record in records:
        pending.add(record)
    assert [pending.get(r["job_id"]) is not None for r in records] == [False, True, True]
