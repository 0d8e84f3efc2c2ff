"""A job's worker pool: the rule on its name, the record field, and the topics it routes to."""

from __future__ import annotations

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.job import JobRequest, validate_submitted
from jobstream._pipeline.model.records import JobSubmitted, evolve, typed
from jobstream._pipeline.topics import Topics
from tests.support.jobs import submitted

NOW = 1_798_000_000_000


def test_a_pool_travels_in_the_spec_and_none_is_the_default() -> None:
    assert (
        JobRequest(job_type="render", owner="a", pool="gpu").to_event(NOW).data.spec.pool
        == "gpu"
    )
    assert JobRequest(job_type="render", owner="a").to_event(NOW).data.spec.pool is None


@pytest.mark.parametrize("name", ["GPU", "eu west", "-gpu", "x" * 51, "gpu.big"])
def test_a_pool_name_not_allowed_is_refused_naming_it(name: str) -> None:
    with pytest.raises(ValidationError, match=r"spec\.pool"):
        JobRequest(job_type="render", owner="a", pool=name)


def test_a_record_from_any_producer_meets_the_same_rule() -> None:
    job = typed("JobSubmitted", submitted(now_ms=NOW).data)
    assert isinstance(job, JobSubmitted)
    validate_submitted(job, now_ms=NOW)  # no pool at all: an older writer's record
    validate_submitted(evolve(job, spec=evolve(job.spec, pool="eu-west")), now_ms=NOW)
    with pytest.raises(ValidationError, match=r"spec\.pool.*Reports/Q3"):
        validate_submitted(evolve(job, spec=evolve(job.spec, pool="Reports/Q3")), now_ms=NOW)


def test_a_pools_topics_are_its_own_and_share_the_types_dead_letter_topic() -> None:
    topics = Topics(Settings(topic_prefix="p."))
    assert topics.execution("render", "HIGH", "gpu") == "p.jobs.exec.render.pool-gpu.high"
    assert topics.execution("render", "HIGH") == "p.jobs.exec.render.high"
    names = [spec.name for spec in topics.job_type_specs("render", "gpu")]
    assert names == ["p.jobs.exec.render.pool-gpu.high", "p.jobs.exec.render.pool-gpu.normal",
                     "p.jobs.exec.render.pool-gpu.low", "p.jobs.dlq.render"]  # fmt: skip
    spec = topics.spec_of("p.jobs.exec.render.pool-gpu.normal")
    assert spec is not None and spec.partitions == topics.settings.exec_partitions
