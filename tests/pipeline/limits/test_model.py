"""Limits as values: rates read from text, keys and records round-trip, bad ones named."""

from __future__ import annotations

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.limits.model import Limit, LimitKey, default_burst, keys_of, parse_rate


@pytest.mark.parametrize(("text", "rate"), [("50/s", 50.0), ("300/m", 5.0), ("0.5/s", 0.5),
                                            (" 7200 / h ", 2.0)])  # fmt: skip
def test_rates_are_read_per_second(text: str, rate: float) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["50", "50/d", "-1/s", "0/s", "fast", ""])
def test_a_rate_that_is_not_one_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValidationError, match="rate"):
        parse_rate(text)


def test_keys_round_trip_through_their_ids() -> None:
    for key in keys_of("acme corp", "report.generate"):
        assert LimitKey.from_id(key.id) == key
    assert str(LimitKey(owner="acme", job_type="a.b")) == "owner=acme,type=a.b"


def test_a_key_names_a_type_an_owner_or_both_and_each_must_be_valid() -> None:
    with pytest.raises(ValidationError, match="needs a job type, an owner or both"):
        LimitKey()
    with pytest.raises(ValidationError, match="job_type"):
        LimitKey(job_type="Reports/Q3")
    with pytest.raises(ValidationError, match="owner"):
        LimitKey(owner=" ")


def test_a_limit_round_trips_through_its_record() -> None:
    limit = Limit.of(LimitKey(owner="acme", job_type="image.render"), 50.0)
    assert limit.burst == default_burst(50.0) == 25
    assert Limit.decode(limit.encode()) == limit
    assert default_burst(1.0) == 1


@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"job_type": "a", "rate": 1}',
                                 b'{"job_type": "a", "rate": -2, "burst": 1}',
                                 b'{"job_type": "a", "rate": 2, "burst": 0}'])  # fmt: skip
def test_a_record_that_is_not_a_limit_is_refused(raw: bytes) -> None:
    with pytest.raises(ValidationError):
        Limit.decode(raw)
