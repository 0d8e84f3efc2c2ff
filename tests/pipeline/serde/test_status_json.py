"""jobs.status values: JSON round trip, clear errors, and docs/status.md kept true."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobstream._pipeline.errors import DeserializationError
from jobstream._pipeline.serde import JobState, JobStatus, LastError, decode_status, encode_status

DOC = Path(__file__).resolve().parents[3] / "docs" / "status.md"

MS = st.integers(0, 2**53)
COUNT = st.integers(0, 2**31)
OPTIONAL_TEXT = st.none() | st.text(max_size=30)

STATUSES = st.builds(
    JobStatus,
    job_id=st.text(min_size=1, max_size=26),
    workflow_id=OPTIONAL_TEXT,
    job_type=st.text(max_size=30),
    owner=st.text(max_size=30),
    state=st.sampled_from(JobState),
    attempt=COUNT,
    epoch=MS,
    priority=st.sampled_from(["HIGH", "NORMAL", "LOW"]),
    scheduled_at_ms=st.none() | MS,
    next_fire_at_ms=st.none() | MS,
    updated_at_ms=MS,
    last_error=st.none() | st.builds(LastError, error_type=st.text(), message=st.text()),
    result=OPTIONAL_TEXT,
    result_uri=OPTIONAL_TEXT,
    runs=COUNT,
    duplicates=COUNT,
)


@given(status=STATUSES)
def test_round_trip(status: JobStatus) -> None:
    assert decode_status(encode_status(status)) == status


def test_encoded_value_is_plain_json_with_every_field() -> None:
    status = JobStatus(job_id="j1", job_type="t", owner="o", state=JobState.QUEUED, updated_at_ms=5)
    value = orjson.loads(encode_status(status))
    assert set(value) == set(JobStatus.model_fields)
    assert value["state"] == "QUEUED"
    assert value["last_error"] is None
    assert value["runs"] == 0


def test_unknown_fields_are_ignored_for_newer_writers() -> None:
    raw = b'{"job_id":"j","job_type":"t","owner":"o","state":"RUNNING",'
    raw += b'"updated_at_ms":1,"added_later":{"x":1}}'
    assert decode_status(raw).state is JobState.RUNNING


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "empty value"),
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe", "invalid JSON"),
        (b"[1, 2]", "must be a JSON object, not list"),
        (b'{"job_id":"j"}', "job_type: Field required"),
        (
            b'{"job_id":"j","job_type":"t","owner":"o","state":"EXPLODED","updated_at_ms":1}',
            "state: Input should be",
        ),
        (
            b'{"job_id":"j","job_type":"t","owner":"o","state":"QUEUED","updated_at_ms":1,'
            b'"last_error":{"message":"m"}}',
            "last_error.error_type: Field required",
        ),
        (
            b'{"job_id":"j","job_type":"t","owner":"o","state":"QUEUED","updated_at_ms":1,'
            b'"attempt":-1}',
            "attempt: Input should be greater than or equal to 0",
        ),
    ],
)
def test_bad_value_is_a_deserialization_error_with_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(DeserializationError) as raised:
        decode_status(raw)
    assert reason in raised.value.reason
    assert raised.value.raw == raw


@given(raw=st.binary(max_size=200))
@settings(max_examples=300)
def test_random_bytes_decode_or_raise_deserialization_error(raw: bytes) -> None:
    try:
        decode_status(raw)
    except DeserializationError as exc:
        assert exc.raw == raw


def test_doc_example_is_a_valid_status() -> None:
    example = re.search(r"```json\n(.*?)```", DOC.read_text(), re.S)
    assert example is not None, "docs/status.md lost its JSON example"
    status = decode_status(example[1].encode())
    assert set(orjson.loads(example[1])) == set(JobStatus.model_fields)
    assert status.state is JobState.FAILED_RETRYING


def test_doc_table_lists_every_field_and_state() -> None:
    text = DOC.read_text()
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.M))
    assert documented == set(JobStatus.model_fields)
    for state in JobState:
        assert f"`{state.value}`" in text
