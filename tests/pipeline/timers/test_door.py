"""The timers at an owner's door, with no broker: a record naming the owner is passed on
to jobs.intake keyed as a client keys it, any other refused naming the principal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobstream._pipeline.model.records import evolve, typed
from jobstream._pipeline.tenancy import intake_key_of
from tests.support.jobs import submitted
from tests.support.timers import T0, TOPICS, TimersDriver, driving, kinds

DOOR = TOPICS.owner_intake("tenant-b")


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[TimersDriver]:
    yield from driving(tmp_path)


def test_a_record_naming_the_doors_owner_is_passed_on_as_written(driver: TimersDriver) -> None:
    job = submitted(owner="tenant-b", now_ms=T0, run_at_ms=T0 + 1000)
    job.data["submitted_by"] = "kafka:User:someone-else"  # claimed: the topic tells
    [passed] = driver.pipe(DOOR, job, key=b"whatever its producer chose")
    record = typed("JobSubmitted", job.data)
    assert passed.topic == TOPICS.intake and passed.value.name == "JobSubmitted"
    assert passed.value.data == evolve(record, submitted_by="kafka:User:jobstream-owner-tenant-b")
    assert passed.key == intake_key_of(record)  # type: ignore[arg-type]
    [scheduled] = driver.pipe(TOPICS.intake, passed.value)  # decided there, as any
    assert scheduled.value.data.kind == "SCHEDULED"
    assert scheduled.value.data.submitted_by == "kafka:User:jobstream-owner-tenant-b"


def test_a_record_naming_another_owner_is_refused_naming_the_principal(
    driver: TimersDriver,
) -> None:
    [dead] = driver.pipe(DOOR, submitted(owner="tenant-a", now_ms=T0), key=b"k")
    headers = dict(dead.headers or ())
    assert dead.topic == TOPICS.intake_dlq and dead.key == b"k"
    assert headers["jobstream.principal"] == b"User:jobstream-owner-tenant-b"
    assert b"names owner 'tenant-a'" in headers["jobstream.error"]
    assert headers["jobstream.source"] == f"{DOOR}/0/0".encode()


def test_a_record_it_cannot_read_is_refused_naming_the_principal(driver: TimersDriver) -> None:
    [dead] = driver.pipe(DOOR, b"not avro")
    assert dead.topic == TOPICS.intake_dlq
    assert dict(dead.headers or ())["jobstream.principal"] == b"User:jobstream-owner-tenant-b"


def test_a_record_on_jobs_intake_is_not_a_doors(driver: TimersDriver) -> None:
    [dead] = driver.pipe(TOPICS.intake, b"not avro")
    assert "jobstream.principal" not in dict(dead.headers or ())
    assert kinds(driver.pipe(TOPICS.intake, submitted(owner="tenant-a", now_ms=T0))) == [
        "SCHEDULED"]
