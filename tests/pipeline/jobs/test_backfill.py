"""A backfill's one-off jobs: copies of the recurring job, with ids fixed by the occurrence."""

from __future__ import annotations

import orjson
import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.backfill import (
    OCCURRENCE_LABEL,
    OF_LABEL,
    BackfillSource,
    backfill_key,
    instant_text,
    occurrence_job_id,
    occurrence_request,
)
from jobstream._pipeline.model import rules
from jobstream._pipeline.model.idempotency import idempotent_job_id
from jobstream._pipeline.workflows.commands import STEP_LABEL

NOW = 1_795_000_000_000
OCCURRENCE = 1_772_323_200_000  # 2026-03-01T00:00Z
SOURCE = BackfillSource(
    job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2T", job_type="report.generate", owner="acme",
    params='{"region":"eu"}', priority="HIGH",
    retry={"max_attempts": 7, "initial_backoff_ms": 2000, "max_backoff_ms": 60_000,
           "backoff_coefficient": 3.0, "non_retryable_errors": ["KeyError"]},
    timeout_ms=90_000, labels={"team": "red", STEP_LABEL: "nightly"}, pool="gpu",
)  # fmt: skip


def test_an_occurrence_is_a_one_off_copy_of_the_recurring_job() -> None:
    request = occurrence_request(SOURCE, OCCURRENCE, run_at_ms=NOW + 500)
    record = request.to_event(NOW).data
    spec = record["spec"]
    assert (spec["job_type"], spec["owner"], spec["priority"], spec["pool"]) == (
        "report.generate", "acme", "HIGH", "gpu")  # fmt: skip
    assert orjson.loads(spec["params"]) == {"region": "eu"}
    assert spec["retry"]["max_attempts"] == 7 and spec["retry"]["backoff_coefficient"] == 3.0
    assert spec["retry"]["non_retryable_errors"] == ["KeyError"]
    assert spec["timeout_ms"] == 90_000
    assert spec["cron"] is None and spec["run_at_ms"] == NOW + 500
    assert spec["labels"] == {"team": "red", OF_LABEL: SOURCE.job_id,
                              OCCURRENCE_LABEL: "2026-03-01T00:00:00Z"}  # fmt: skip
    assert record["workflow_id"] is None and spec["depends_on"] == []


def test_its_id_is_fixed_by_the_job_and_the_occurrence() -> None:
    first = occurrence_request(SOURCE, OCCURRENCE, run_at_ms=NOW).to_event(NOW).data
    again = occurrence_request(SOURCE, OCCURRENCE, run_at_ms=NOW + 9000).to_event(NOW + 9000).data
    later = occurrence_request(SOURCE, OCCURRENCE + 1, run_at_ms=NOW).to_event(NOW).data
    assert first["job_id"] == again["job_id"] != later["job_id"]
    assert first["job_id"] == occurrence_job_id("acme", SOURCE.job_id, OCCURRENCE)
    assert first["job_id"] == idempotent_job_id("acme", backfill_key(SOURCE.job_id, OCCURRENCE))
    assert first["idempotency_key"] == f"backfill:{SOURCE.job_id}:{OCCURRENCE}"


def test_a_job_s_defaults_stay_defaults() -> None:
    bare = BackfillSource(job_id=SOURCE.job_id, job_type="data.process", owner="acme")
    spec = occurrence_request(bare, OCCURRENCE, run_at_ms=NOW).to_event(NOW).data["spec"]
    assert spec["retry"] is None and spec["timeout_ms"] is None and spec["pool"] is None
    assert spec["priority"] == "NORMAL" and spec["params"] == "{}"


def test_no_room_for_the_backfill_labels_names_the_labels() -> None:
    full = BackfillSource(job_id=SOURCE.job_id, job_type="data.process", owner="acme",
                          labels={f"l{i}": "x" for i in range(rules.MAX_LABELS)})  # fmt: skip
    with pytest.raises(ValidationError) as caught:
        occurrence_request(full, OCCURRENCE, run_at_ms=NOW)
    assert caught.value.field == "spec.labels"


def test_instant_text_is_utc_iso_8601() -> None:
    assert instant_text(OCCURRENCE) == "2026-03-01T00:00:00Z"
    assert instant_text(OCCURRENCE + 250) == "2026-03-01T00:00:00.250Z"
