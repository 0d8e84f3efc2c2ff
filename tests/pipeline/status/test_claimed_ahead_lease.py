"""Runs claimed seconds before their instant (the timers' adaptive lead, workers claiming
on arrival): a worker that dies holding them leaves each to end LOST when its lease passes,
counted from the claim, and be retried; a live worker's beats keep them. No broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.serde import JobState
from tests.pipeline.status import events as ev
from tests.pipeline.status.events import T0
from tests.support.status import JOB, LEASE, StatusDriver, lifecycles, status_driver, statuses

pytestmark = pytest.mark.fast

LEAD = 10_000
DUE = T0 + LEAD


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[StatusDriver]:
    driver = status_driver(tmp_path)
    yield driver
    driver.close()


def claimed_ahead(driver: StatusDriver) -> dict:  # type: ignore[type-arg]
    run = ev.execution(JOB, epoch=T0) | {"scheduled_at_ms": DUE}
    driver.step(T0, ev.fired(run), ev.outcome("STARTED", run, at_ms=T0 + 1))
    return run


def test_a_run_held_by_a_worker_that_died_ends_lost_at_its_lease_and_is_retried(
    driver: StatusDriver,
) -> None:
    run = claimed_ahead(driver)
    assert driver.step(DUE) == [], "its instant passes: the lease is not over"
    assert driver.step(T0 + LEASE - 1) == []
    [lost] = lifecycles(driver.step(T0 + LEASE))
    assert (lost["kind"], lost["execution_id"]) == ("LOST", run["execution_id"])
    assert lost["error"]["retryable"] is True
    read_back = statuses(driver.step(T0 + LEASE + 10, lost))
    assert [s.state for s in read_back] == [JobState.FAILED_RETRYING]


def test_a_live_worker_keeps_the_lease_of_a_run_claimed_ahead(driver: StatusDriver) -> None:
    run = claimed_ahead(driver)
    driver.step(T0 + LEAD, ev.outcome("HEARTBEAT", run, at_ms=T0 + LEAD))
    assert driver.step(T0 + LEASE) == [], "beaten at its instant"
    assert [e["kind"] for e in lifecycles(driver.step(T0 + LEAD + LEASE))] == ["LOST"]
