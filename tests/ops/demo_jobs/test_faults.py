from __future__ import annotations

import pytest

from jobstream._ops.demo_jobs.faults import PoisonDemoError, TransientDemoError, inject_faults
from jobstream._pipeline.errors import JobstreamError, NonRetryableError


@pytest.mark.parametrize("params", [{}, {"poison": False}, {"fail_until_attempt": 1}])
def test_no_fault_asked_runs_every_attempt(params: dict[str, object]) -> None:
    for attempt in (1, 2, 3):
        inject_faults(params, attempt)


def test_fail_until_attempt_fails_twice_then_succeeds() -> None:
    params = {"fail_until_attempt": 3}
    for attempt in (1, 2):
        with pytest.raises(TransientDemoError, match=f"attempt {attempt}") as caught:
            inject_faults(params, attempt)
        assert isinstance(caught.value, JobstreamError)
        assert caught.value.retryable
    inject_faults(params, 3)
    inject_faults(params, 4)


def test_poison_fails_every_attempt_with_a_retryable_error() -> None:
    for attempt in range(1, 11):
        with pytest.raises(PoisonDemoError) as caught:
            inject_faults({"poison": True}, attempt)
        assert caught.value.retryable


def test_poison_wins_over_fail_until_attempt() -> None:
    with pytest.raises(PoisonDemoError):
        inject_faults({"poison": True, "fail_until_attempt": 1}, 5)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"fail_until_attempt": "3"}, "fail_until_attempt"),
        ({"fail_until_attempt": True}, "fail_until_attempt"),
        ({"fail_until_attempt": 0}, "fail_until_attempt"),
        ({"fail_until_attempt": 2.5}, "fail_until_attempt"),
        ({"poison": "yes"}, "poison"),
    ],
)
def test_malformed_fault_params_are_not_retried(params: dict[str, object], field: str) -> None:
    with pytest.raises(NonRetryableError, match=rf"params\.{field}") as caught:
        inject_faults(params, 1)
    assert not caught.value.retryable
