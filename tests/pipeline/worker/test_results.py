"""Where results go: inline up to 256 KB of JSON, the result store beyond and for bytes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.worker import LocalResultStore, ResultStore
from pipeline.worker.results import (
    INLINE_LIMIT,
    ResultEncodingError,
    inline_result,
    route_result,
)

JOB, EXECUTION = "01JOB", "01JOB:1700000000000:1"


@pytest.fixture
def store(tmp_path: Path) -> LocalResultStore:
    return LocalResultStore(tmp_path / "results")


def test_small_json_results_are_inline(store: LocalResultStore) -> None:
    for value in ({"rows": 3}, [1, 2], "done", 7, 1.5, True, None):
        routed = route_result(value, store=store, job_id=JOB, execution_id=EXECUTION)
        assert routed.result_uri is None
        assert routed.result is not None and orjson.loads(routed.result) == value
    assert not store.directory.exists(), "nothing written for inline results"


def test_a_result_at_the_limit_is_inline_and_one_byte_more_goes_to_the_store(
    store: LocalResultStore,
) -> None:
    at_limit = "x" * (INLINE_LIMIT - 2)  # the two quotes make it exactly the limit
    routed = route_result(at_limit, store=store, job_id=JOB, execution_id=EXECUTION)
    assert routed.result is not None and len(routed.result) == INLINE_LIMIT
    over = at_limit + "x"
    routed = route_result(over, store=store, job_id=JOB, execution_id=EXECUTION)
    assert routed.result is None and routed.result_uri is not None
    assert routed.result_uri.startswith("file:///")
    assert orjson.loads(store.get(routed.result_uri)) == over


def test_bytes_always_go_to_the_store_as_they_are(store: LocalResultStore) -> None:
    routed = route_result(b"\x00png", store=store, job_id=JOB, execution_id=EXECUTION)
    assert routed.result is None and routed.result_uri is not None
    assert store.get(routed.result_uri) == b"\x00png"
    assert Path(routed.result_uri.removeprefix("file://")).is_file()


def test_a_rerun_of_the_same_execution_overwrites_its_result(store: LocalResultStore) -> None:
    first = route_result(b"one", store=store, job_id=JOB, execution_id=EXECUTION)
    second = route_result(b"two", store=store, job_id=JOB, execution_id=EXECUTION)
    assert first.result_uri == second.result_uri
    assert store.get(second.result_uri or "") == b"two"


def test_values_neither_json_nor_bytes_are_a_non_retryable_error(store: LocalResultStore) -> None:
    with pytest.raises(ResultEncodingError) as caught:
        route_result(object(), store=store, job_id=JOB, execution_id=EXECUTION)
    assert caught.value.retryable is False


def test_the_local_store_refuses_keys_leaving_its_directory(store: LocalResultStore) -> None:
    for key in ("../escape", "/abs", "a/../../b", ""):
        with pytest.raises(ValueError):
            store.put(key, b"x")
    with pytest.raises(ValueError):
        store.get("s3://bucket/key")


def test_any_object_with_put_and_get_is_a_result_store(tmp_path: Path) -> None:
    class Memory:
        def __init__(self) -> None:
            self.data: dict[str, bytes] = {}

        def put(self, key: str, data: bytes) -> str:
            self.data[f"mem://{key}"] = data
            return f"mem://{key}"

        def get(self, uri: str) -> bytes:
            return self.data[uri]

    memory = Memory()
    assert isinstance(memory, ResultStore)
    routed = route_result(b"abc", store=memory, job_id=JOB, execution_id=EXECUTION)
    assert routed.result_uri == "mem://01JOB/01JOB_1700000000000_1.bin"


def test_inline_result_says_which_results_need_the_store() -> None:
    for value in ({"rows": 3}, "done", None):
        routed = inline_result(value)
        assert routed is not None and routed.result_uri is None
        assert routed.result is not None and orjson.loads(routed.result) == value
    assert inline_result(b"raw") is None, "bytes always go to the store"
    assert inline_result("x" * INLINE_LIMIT) is None, "too large to go inline"
    with pytest.raises(ResultEncodingError):
        inline_result(object())
