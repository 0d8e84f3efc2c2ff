"""The filter: CEL over key, headers and value, compiled once, never eval-ed."""

from __future__ import annotations

import pytest

from jobstream._pipeline.errors import DeserializationError, ValidationError
from jobstream._pipeline.triggers.filter import Filter

PAID = 'value.status == "paid" && value.total > 100'


@pytest.mark.parametrize(("expression", "key", "headers", "value", "expected"), [
    (PAID, None, {}, {"status": "paid", "total": 150}, True),
    (PAID, None, {}, {"status": "paid", "total": 50}, False),
    ('key.startsWith("eu-")', "eu-1", {}, None, True),
    ('headers["source"] == "shop"', None, {"source": "shop"}, 1, True),
    ('"source" in headers', None, {}, 1, False),
    ('has(value.total) && value.total > 1', None, {}, {"status": "x"}, False),
    ("value.items.exists(i, i.sku == 'A1')", None, {}, {"items": [{"sku": "A1"}]}, True),
    ("size(value) > 3", None, {}, "text", True),
])  # fmt: skip
def test_a_filter_reads_key_headers_and_value(expression: str, key: str | None, headers: dict,
                                              value: object, expected: bool) -> None:  # fmt: skip
    assert Filter.compile(expression).matches(key, headers, value) is expected


@pytest.mark.parametrize("expression", ["value.(", "1 +", "", "   ", "a" * 2001, 42])
def test_an_expression_that_does_not_compile_is_refused_naming_filter(expression: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Filter.compile(expression)
    assert caught.value.field == "filter"


def test_python_is_not_reachable_from_a_filter() -> None:
    with pytest.raises((ValidationError, DeserializationError)):
        Filter.compile('__import__("os").system("true")').matches(None, {}, 1)


@pytest.mark.parametrize(("expression", "value", "reason"), [
    ("value.total > 1", {"status": "x"}, "no such member"),
    ("value.total > 1", "text", "filter:"),
    ("value", {"a": 1}, "not a boolean"),
])  # fmt: skip
def test_a_record_the_filter_cannot_read_is_unreadable_with_the_reason(
        expression: str, value: object, reason: str) -> None:  # fmt: skip
    with pytest.raises(DeserializationError) as caught:
        Filter.compile(expression).matches(None, {}, value)
    assert reason in str(caught.value)
