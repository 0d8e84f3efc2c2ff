"""A handler's result: encoded once, kept on jobs.results, inline in SUCCEEDED when small.

Every run whose handler returns a value leaves one record on the results topic
(``jobs.results``, compacted; see pipeline/topics.py), produced in the same transaction as
its SUCCEEDED, so no host's disk holds a result and any Kafka client reads it. A handler
that returns None leaves none (most handlers of a busy type return nothing: a record
each was a tenth of a no-op job's records): its SUCCEEDED's inline ``null`` is its result.

| part | what |
|---|---|
| key | the job id: compaction keeps each job's latest result |
| value | the result's bytes (JSON text, or the bytes a handler returned) |
| header ``content-type`` | ``application/json``, ``application/octet-stream``, or a Result's |
| header ``execution-id`` | the run it came from (``<job>:<fire ms>:<attempt>``) |
| header ``attempt`` | the attempt, as decimal text |

A value over the worker's ``max_result_bytes`` (default 1 MB) fails the run with
:class:`ResultTooLargeError`, which names the limit: non-retryable, since the same code
returns as much again. The SUCCEEDED event (jobs.events, read by every view and console
consumer) carries the result inline only while it is JSON of at most
:data:`INLINE_LIMIT`; otherwise it carries :func:`result_uri`, which names the topic and
the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from jobstream._pipeline.errors import NonRetryableError

INLINE_LIMIT = 256 * 1024
"""Largest encoded result (bytes of JSON text) carried inline in SUCCEEDED.result."""

DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""A result's largest size on jobs.results, as for a job's parameters."""

JSON = "application/json"
OCTET_STREAM = "application/octet-stream"

CONTENT_TYPE_HEADER = "content-type"
EXECUTION_HEADER = "execution-id"
ATTEMPT_HEADER = "attempt"


@dataclass(frozen=True, slots=True)
class Result:
    """What a handler returns for bytes of its own type: ``Result(page, "text/html")``."""

    body: bytes
    content_type: str = OCTET_STREAM
    """Served as the ``Content-Type`` of ``GET /api/v1/jobs/{id}/result``."""


class ResultEncodingError(NonRetryableError):
    """A handler returned a value that is neither JSON-encodable nor bytes.

    Non-retryable: the same code returns the same kind of value on every attempt.
    """


class ResultTooLargeError(NonRetryableError):
    """A result over the worker's ``max_result_bytes``: jobs.results does not take it."""


@dataclass(frozen=True, slots=True)
class EncodedResult:
    """A handler's return value as it leaves the worker."""

    body: bytes
    """The value on jobs.results."""
    content_type: str
    inline: str | None
    """The JSON text SUCCEEDED carries (at most ``INLINE_LIMIT``); None: too large, or
    not JSON, so SUCCEEDED carries :func:`result_uri` instead."""

    @property
    def kept(self) -> bool:
        """Whether the result goes to jobs.results: not for a handler that returned None,
        whose SUCCEEDED carries its ``null`` inline, and readers answer it from there."""
        return not (self.inline == "null" and self.content_type == JSON)


def encode_result(value: Any, *, max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                  inline_limit: int = INLINE_LIMIT) -> EncodedResult:  # fmt: skip
    """Encode a handler's return value: bytes as they are, a :class:`Result` with its
    content type, anything else as JSON. Raises ResultEncodingError for a value that is
    none of these, ResultTooLargeError for one over ``max_bytes``."""
    if isinstance(value, Result):
        body, content_type = bytes(value.body), value.content_type
    elif isinstance(value, bytes | bytearray | memoryview):
        body, content_type = bytes(value), OCTET_STREAM
    else:
        body, content_type = _encode(value), JSON
    if len(body) > max_bytes:
        raise ResultTooLargeError(
            f"the result is {len(body):,} bytes, over the limit of {max_bytes:,} bytes "
            "(JOBSTREAM_MAX_RESULT_BYTES); a larger result belongs in storage of its own, "
            "the job returning where it is"
        )
    inline = body.decode() if content_type == JSON and len(body) <= inline_limit else None
    return EncodedResult(body, content_type, inline)


def result_uri(results_topic: str, job_id: str) -> str:
    """``kafka://<results topic>/<job id>``: where SUCCEEDED says a large result is (the
    record's ``execution-id`` header names the run)."""
    return f"kafka://{results_topic}/{job_id}"


def result_headers(encoded: EncodedResult, execution_id: str,
                   attempt: int) -> list[tuple[str, bytes]]:  # fmt: skip
    return [(CONTENT_TYPE_HEADER, encoded.content_type.encode()),
            (EXECUTION_HEADER, execution_id.encode()),
            (ATTEMPT_HEADER, str(attempt).encode())]  # fmt: skip


def _encode(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise ResultEncodingError(
            f"handler returned a {type(value).__name__}, which is neither JSON nor bytes: {exc}"
        ) from exc
