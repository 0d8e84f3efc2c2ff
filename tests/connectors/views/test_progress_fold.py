"""A job's progress in its view document: taken from each jobs.status record, as the API's
job shows it, and a document written before progress existed still read."""

from __future__ import annotations

from jobstream._connectors.api.models import JobOut
from jobstream._connectors.views.fold import apply_status, apply_submitted
from jobstream._pipeline.serde import Progress
from tests.connectors.views.records import status, submitted

T = 1_767_225_600_000


def test_each_status_brings_its_progress_and_a_new_run_none() -> None:
    record = submitted(at_ms=T)
    doc = apply_submitted(None, record)
    assert doc["progress"] is None
    running = apply_status(doc, status(record, "RUNNING", at_ms=T + 10, attempt=1,
                                       progress=Progress(fraction=0.5, message="half",
                                                         at_ms=T + 9)))  # fmt: skip
    assert running["progress"] == {"fraction": 0.5, "message": "half", "at_ms": T + 9}
    shown = JobOut(**running).progress
    assert shown is not None and (shown.fraction, shown.message) == (0.5, "half")
    older = apply_status(running, status(record, "RUNNING", at_ms=T + 5, attempt=1))
    assert older["progress"] == running["progress"], "an older status changes nothing"
    retried = apply_status(running, status(record, "QUEUED", at_ms=T + 20, attempt=2))
    assert retried["progress"] is None and JobOut(**retried).progress is None


def test_a_document_from_before_progress_reads_as_none() -> None:
    record = submitted(at_ms=T)
    doc = apply_status(None, status(record, "RUNNING", at_ms=T + 1))
    del doc["progress"]
    assert JobOut(**doc).progress is None
    later = apply_status(doc, status(record, "RUNNING", at_ms=T + 2,
                                     progress=Progress(fraction=1, at_ms=T)))  # fmt: skip
    assert later["progress"] == {"fraction": 1.0, "message": None, "at_ms": T}
