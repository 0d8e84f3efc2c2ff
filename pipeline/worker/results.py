"""Where a handler's result goes: inline in SUCCEEDED, or into a result store by URI.

A result travels inside the SUCCEEDED event only while it is small (at most
:data:`INLINE_LIMIT`, 256 KB of JSON text): jobs.events is the execution history, read by
every view and console consumer, and large values there would slow all of them. Larger
results, and every ``bytes`` result (Avro's ``result`` field is text), are written to a
:class:`ResultStore` and the event carries its URI.

The store is pluggable (anything with ``put``/``get``); :class:`LocalResultStore` writes
files under one directory, which suits a single machine or a shared volume. Keys are
derived from the execution id, so a re-run of the same execution overwrites its own
result instead of leaving a second copy.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

import orjson

from pipeline.errors import NonRetryableError

log = logging.getLogger(__name__)

INLINE_LIMIT = 256 * 1024
"""Largest encoded result (bytes of JSON text) carried inline in SUCCEEDED.result."""

DEFAULT_RESULT_DIR = Path(".jobstream/results")


@runtime_checkable
class ResultStore(Protocol):
    """Stores result bytes under a key and hands back a URI any reader can resolve."""

    def put(self, key: str, data: bytes) -> str:
        """Store ``data`` under ``key`` (a relative, '/'-separated name); return its URI."""
        ...

    def get(self, uri: str) -> bytes:
        """The bytes stored at a URI this store returned."""
        ...


class ResultEncodingError(NonRetryableError):
    """A handler returned a value that is neither JSON-encodable nor bytes.

    Non-retryable: the same code returns the same kind of value on every attempt.
    """


class LocalResultStore:
    """Results as files under ``directory``; URIs are ``file:///absolute/path``."""

    def __init__(self, directory: Path | str = DEFAULT_RESULT_DIR) -> None:
        self.directory = Path(directory).resolve()

    def put(self, key: str, data: bytes) -> str:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a result, and a re-run replaces it.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path.as_uri()

    def get(self, uri: str) -> bytes:
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            raise ValueError(f"not a file URI: {uri!r}")
        return Path(unquote(parsed.path)).read_bytes()

    def _path(self, key: str) -> Path:
        parts = PurePosixPath(key).parts
        if not parts or key.startswith("/") or any(p in ("..", ".") for p in parts):
            raise ValueError(f"result key must be a relative path without '..': {key!r}")
        return self.directory.joinpath(*parts)

    def __repr__(self) -> str:
        return f"LocalResultStore({str(self.directory)!r})"


@dataclass(frozen=True, slots=True)
class RoutedResult:
    """What SUCCEEDED carries: exactly one of the two is set (``None`` is inline ``null``)."""

    result: str | None
    result_uri: str | None


def result_key(job_id: str, execution_id: str, suffix: str) -> str:
    """``<job id>/<execution id>.<suffix>``: one file per execution, ':' kept out of names."""
    return f"{job_id}/{execution_id.replace(':', '_')}.{suffix}"


def inline_result(value: Any, *, limit: int = INLINE_LIMIT) -> RoutedResult | None:
    """The result as SUCCEEDED carries it inline; None when it goes to the store (bytes,
    or JSON over ``limit``). Raises ResultEncodingError for a value that is neither."""
    if value is None:
        return _NULL
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    encoded = _encode(value)
    return RoutedResult(encoded.decode(), None) if len(encoded) <= limit else None


def route_result(
    value: Any, *, store: ResultStore, job_id: str, execution_id: str, limit: int = INLINE_LIMIT
) -> RoutedResult:
    """Encode a handler's return value and decide where it goes (see the module doc)."""
    if isinstance(value, bytes | bytearray | memoryview):
        uri = store.put(result_key(job_id, execution_id, "bin"), bytes(value))
        return RoutedResult(None, uri)
    encoded = _encode(value)
    if len(encoded) <= limit:
        return RoutedResult(encoded.decode(), None)
    return RoutedResult(None, store.put(result_key(job_id, execution_id, "json"), encoded))


def _encode(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise ResultEncodingError(
            f"handler returned a {type(value).__name__}, which is neither JSON nor bytes: {exc}"
        ) from exc


_NULL = RoutedResult("null", None)
"""A handler that returns nothing: JSON ``null`` inline, the most common result."""
