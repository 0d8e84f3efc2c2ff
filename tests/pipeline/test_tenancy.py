"""The owners' doors: their names, the owner a topic belongs to, what passes (no broker)."""

from __future__ import annotations

import re

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.jobs.outbound import outgoing
from jobstream._pipeline.model.records import JobCancelled, StepEnded, WorkflowCancelled, typed
from jobstream._pipeline.serde import Event, make_serde
from jobstream._pipeline.tenancy import (
    door_owner,
    intake_key_of,
    owner_intake,
    owner_intake_pattern,
    owner_of_topic,
    owner_principal,
    refusal,
)
from tests.support.jobs import submitted as submitted_dict


def submitted(**fields: str) -> Event:
    return Event("JobSubmitted", typed("JobSubmitted", submitted_dict(**fields).data))  # type: ignore[arg-type]


def test_an_owners_topic_and_principal_are_named_from_it() -> None:
    assert owner_intake("prod.", "acme") == "prod.jobs.intake.owner.acme"
    assert owner_principal("tenant-b") == "jobstream-owner-tenant-b"
    assert owner_of_topic("prod.", "prod.jobs.intake.owner.acme") == "acme"
    for other in ("prod.jobs.intake", "prod.jobs.intake.dlq", "jobs.intake.owner.acme",
                  "prod.jobs.intake.owner.", None):  # fmt: skip
        assert owner_of_topic("prod.", other) is None


@pytest.mark.parametrize("owner", ["", "acme.eu", "-x", "a b", "ü", "x" * 101])
def test_an_owner_whose_name_cannot_be_a_topics_has_no_door(owner: str) -> None:
    with pytest.raises(ValidationError, match="cannot have an intake topic") as refused:
        door_owner(owner)
    assert refused.value.field == "owner"


def test_the_timers_pattern_matches_every_owners_topic_and_nothing_else() -> None:
    pattern = re.compile(owner_intake_pattern("p.").removeprefix("^"))
    assert pattern.fullmatch("p.jobs.intake.owner.acme")
    assert pattern.fullmatch("p.jobs.intake.owner.tenant_b-2")
    for other in ("p.jobs.intake", "p.jobs.intake.dlq", "pxjobs.intake.owner.acme",
                  "q.jobs.intake.owner.acme"):  # fmt: skip
        assert not pattern.fullmatch(other)


def test_a_record_naming_the_doors_owner_passes_and_any_other_is_refused() -> None:
    mine, theirs = submitted(owner="tenant-b").data, submitted(owner="tenant-a").data
    assert refusal("tenant-b", mine) is None
    assert "names owner 'tenant-a'" in (refusal("tenant-b", theirs) or "")
    cancel = JobCancelled(job_id=mine.job_id, requested_at_ms=1)
    assert "not taken on an owner's intake topic" in (refusal("tenant-b", cancel) or "")
    unnamed = WorkflowCancelled(workflow_id="w", requested_at_ms=1)
    assert "names no owner" in (refusal("tenant-b", unnamed) or "")
    ended = StepEnded(job_id=mine.job_id, workflow_id="w", outcome="SUCCEEDED", owner="tenant-b",
                      ended_at_ms=1)  # fmt: skip
    assert refusal("tenant-b", ended) is not None, "the pipeline's own records never pass"


def test_a_client_at_a_door_refuses_another_owners_record_before_sending() -> None:
    serialize, _ = make_serde(None)
    with pytest.raises(ValidationError, match="JOBSTREAM_INTAKE_OWNER=tenant-b") as refused:
        outgoing([submitted(owner="tenant-b"), submitted(owner="tenant-a")], serialize,
                 owner="tenant-b")  # fmt: skip
    assert refused.value.field == "owner"
    [record] = outgoing([submitted(owner="tenant-b")], serialize, owner="tenant-b")
    assert record.key == intake_key_of(submitted(owner="tenant-b", job_id=record.job_id).data)
