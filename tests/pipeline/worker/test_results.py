"""How a result leaves the worker: its bytes and content type for jobs.results, inline in
SUCCEEDED up to 256 KB of JSON, refused over the limit."""

from __future__ import annotations

import orjson
import pytest

from jobstream._pipeline.kafka.headers import header
from jobstream._pipeline.worker import Result
from jobstream._pipeline.worker.results import (
    DEFAULT_MAX_RESULT_BYTES,
    INLINE_LIMIT,
    JSON,
    OCTET_STREAM,
    ResultEncodingError,
    ResultTooLargeError,
    encode_result,
    result_headers,
    result_uri,
)

JOB, EXECUTION = "01JOB", "01JOB:1700000000000:1"


def test_small_json_results_are_inline_and_kept_as_json() -> None:
    for value in (None, {"rows": 3}, [1, 2], "done", 42):
        encoded = encode_result(value)
        assert encoded.content_type == JSON
        assert orjson.loads(encoded.body) == value
        assert encoded.inline is not None and orjson.loads(encoded.inline) == value


def test_json_over_256_kb_goes_to_the_topic_only() -> None:
    at_limit = "x" * (INLINE_LIMIT - 2)  # two quotes make it exactly the limit
    encoded = encode_result(at_limit)
    assert encoded.inline is not None and len(encoded.inline) == INLINE_LIMIT
    over = encode_result(at_limit + "y")
    assert over.inline is None and over.content_type == JSON
    assert orjson.loads(over.body) == at_limit + "y"


def test_bytes_are_kept_as_they_are_and_never_inline() -> None:
    encoded = encode_result(b"\x00png")
    assert (encoded.body, encoded.content_type, encoded.inline) == (b"\x00png", OCTET_STREAM, None)
    assert encode_result(bytearray(b"ab")).body == b"ab"
    assert encode_result(memoryview(b"cd")).body == b"cd"


def test_a_result_of_its_own_type_keeps_it() -> None:
    encoded = encode_result(Result(b"<p>hi</p>", "text/html; charset=utf-8"))
    assert (encoded.body, encoded.content_type, encoded.inline) == (
        b"<p>hi</p>", "text/html; charset=utf-8", None)


def test_one_megabyte_fits_and_one_byte_more_is_refused_naming_the_limit() -> None:
    assert DEFAULT_MAX_RESULT_BYTES == 1024 * 1024
    assert len(encode_result(b"\x01" * DEFAULT_MAX_RESULT_BYTES).body) == DEFAULT_MAX_RESULT_BYTES
    with pytest.raises(ResultTooLargeError) as refused:
        encode_result(b"\x01" * (DEFAULT_MAX_RESULT_BYTES + 1))
    assert refused.value.retryable is False
    assert "1,048,577 bytes" in str(refused.value)
    assert "limit of 1,048,576 bytes" in str(refused.value)
    assert "JOBSTREAM_MAX_RESULT_BYTES" in str(refused.value)
    with pytest.raises(ResultTooLargeError, match="limit of 10 bytes"):
        encode_result({"a": "long enough"}, max_bytes=10)


def test_values_neither_json_nor_bytes_are_a_non_retryable_error() -> None:
    with pytest.raises(ResultEncodingError) as refused:
        encode_result(object())
    assert refused.value.retryable is False


def test_the_record_names_its_run_and_the_uri_its_place() -> None:
    headers = result_headers(encode_result({"a": 1}), EXECUTION, 3)
    assert header(headers, "content-type") == JSON
    assert header(headers, "execution-id") == EXECUTION
    assert header(headers, "attempt") == "3"
    assert result_uri("p.jobs.results", JOB) == "kafka://p.jobs.results/01JOB"
