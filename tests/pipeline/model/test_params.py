"""The parameters' summary that jobs.status carries."""

from __future__ import annotations

import hashlib

from jobstream._pipeline.model.params import (
    STATUS_PARAMS_INLINE_BYTES,
    submission_fields,
    summarize_params,
)
from jobstream._pipeline.model.records import JobSpec, JobSubmitted


def test_small_parameters_travel_inline_with_their_size_and_digest() -> None:
    text = '{"month":"2024-10"}'
    summary = summarize_params(text)
    assert summary.params == text
    assert summary.params_bytes == len(text.encode())
    assert summary.params_sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_large_parameters_are_summarised_by_size_and_digest_only() -> None:
    text = '{"blob":"' + "x" * STATUS_PARAMS_INLINE_BYTES + '"}'
    summary = summarize_params(text)
    assert summary.params is None
    assert summary.params_bytes == len(text)
    assert summary.params_sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_the_limit_is_in_bytes_of_utf8_not_characters() -> None:
    text = '{"s":"' + "é" * (STATUS_PARAMS_INLINE_BYTES // 2) + '"}'
    assert len(text) <= STATUS_PARAMS_INLINE_BYTES < len(text.encode())
    assert summarize_params(text).params is None


def test_a_submission_gives_its_creation_time_labels_and_summary() -> None:
    job = JobSubmitted(job_id="j", submitted_at_ms=123,
                       spec=JobSpec(job_type="t", owner="o", params="{}", labels={"team": "a"}))
    fields = submission_fields(job)
    assert fields["created_at_ms"] == 123
    assert fields["labels"] == {"team": "a"}
    assert (fields["params"], fields["params_bytes"]) == ("{}", 2)
