"""An owner's quotas: their checks, their record, defaults under an override, and which
new job type is one too many."""

from __future__ import annotations

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.quotas.model import Quota, first_new_type_over

DEFAULTS = Quota(job_types=50, submit_rate=1000.0, submit_burst=5000, pending_jobs=100_000,
                 streams=20)  # fmt: skip


def test_an_override_sets_some_quotas_and_the_defaults_give_the_rest() -> None:
    override = Quota(job_types=3, streams=0)
    assert override.over(DEFAULTS) == Quota(job_types=3, submit_rate=1000.0, submit_burst=5000,
                                            pending_jobs=100_000, streams=0)  # fmt: skip
    assert Quota().over(DEFAULTS) == DEFAULTS
    assert Quota().is_empty and not override.is_empty


def test_the_record_holds_only_what_is_set_and_reads_back() -> None:
    override = Quota(submit_rate=2.5, pending_jobs=7)
    assert override.encode() == b'{"submit_rate":2.5,"pending_jobs":7}'
    assert Quota.decode(override.encode()) == override


@pytest.mark.parametrize(("raw", "field"), [
    (b"[1]", "quota"), (b"{", "quota"), (b'{"jobs": 3}', "jobs"),
    (b'{"job_types": -1}', "job_types"), (b'{"streams": 1.5}', "streams"),
    (b'{"pending_jobs": true}', "pending_jobs"), (b'{"submit_rate": 0}', "submit_rate"),
    (b'{"submit_rate": "fast"}', "submit_rate"), (b'{"submit_burst": 0}', "submit_burst"),
])  # fmt: skip
def test_a_bad_record_is_refused_naming_its_field(raw: bytes, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Quota.decode(raw)
    assert caught.value.field == field


def test_the_first_new_type_past_the_quota_is_named() -> None:
    assert first_new_type_over({"a", "b"}, ["a", "c", "b", "d", "c"], 3) == 3
    assert first_new_type_over({"a", "b"}, ["a", "c", "b", "c"], 3) is None
    assert first_new_type_over(set(), [f"t{n}" for n in range(30)], 20) == 20


def test_types_held_keep_working_past_a_lowered_quota() -> None:
    assert first_new_type_over({"a", "b", "c"}, ["c", "a"], 1) is None
    assert first_new_type_over({"a", "b", "c"}, ["c", "d"], 1) == 1
    assert first_new_type_over(set(), ["a"], 0) == 0
