"""The plan of ``jobstream topics grow --exec-partitions`` and its refusals (no broker)."""

from __future__ import annotations

import re

import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import TopicMismatchError, ValidationError
from jobstream._pipeline.kafka.admin import partition_problem
from jobstream._pipeline.topics import PRIORITIES, Topics
from jobstream._pipeline.worker.grow import (
    execution_topics,
    plan_exec_grow,
    refuse_running,
)

SETTINGS = Settings(topic_prefix="t.", exec_partitions=2,
                    job_types=("data.process", "image.render"),
                    concurrency_limits={"report.generate": 3})  # fmt: skip
TOPICS = Topics(SETTINGS)


def tiers(job_type: str, count: int, pool: str | None = None) -> dict[str, int]:
    return {TOPICS.execution(job_type, p, pool): count for p in PRIORITIES}


CLUSTER = {**tiers("data.process", 2), **tiers("data.process", 2, pool="gpu"),
           **tiers("image.render", 2), **tiers("report.generate", 2),
           TOPICS.dead_letter("data.process"): 1, TOPICS.intake: 6}  # fmt: skip


def test_every_configured_type_grows_all_its_tiers_and_pools_and_nothing_else() -> None:
    plan = plan_exec_grow(TOPICS, (), CLUSTER, 4)
    assert plan.to_grow == sorted([*tiers("data.process", 2), *tiers("image.render", 2),
                                   *tiers("data.process", 2, pool="gpu")])  # fmt: skip
    assert plan.limited == ()
    assert TOPICS.dead_letter("data.process") not in plan.counts


def test_a_named_type_grows_alone() -> None:
    plan = plan_exec_grow(TOPICS, ["image.render"], CLUSTER, 4)
    assert plan.to_grow == sorted(tiers("image.render", 2))


def test_a_pool_is_not_mistaken_for_another_type() -> None:
    cluster = {**CLUSTER, **tiers("data", 2)}
    assert execution_topics(TOPICS, "data", cluster) == sorted(tiers("data", 2))


def test_running_again_finishes_a_grow_that_stopped_and_then_has_nothing_to_do() -> None:
    half = {**CLUSTER, TOPICS.execution("image.render", "low"): 4}
    plan = plan_exec_grow(TOPICS, ["image.render"], half, 4)
    assert plan.to_grow == [TOPICS.execution("image.render", p) for p in ("high", "normal")]
    assert plan_exec_grow(TOPICS, ["image.render"], {**CLUSTER, **tiers("image.render", 4)},
                          4).nothing_to_do  # fmt: skip


def test_a_count_below_the_current_one_is_refused_naming_the_option() -> None:
    with pytest.raises(ValidationError) as refused:
        plan_exec_grow(TOPICS, ["image.render"], {**CLUSTER, **tiers("image.render", 4)}, 3)
    assert refused.value.field == "--exec-partitions"
    assert "never removes" in str(refused.value)


def test_a_type_without_topics_or_with_a_bad_name_is_refused() -> None:
    missing = re.escape("no topic t.jobs.exec.video.encode.high")
    with pytest.raises(TopicMismatchError, match=missing):
        plan_exec_grow(TOPICS, ["video.encode"], CLUSTER, 4)
    with pytest.raises(ValidationError) as bad:
        plan_exec_grow(TOPICS, ["Not A Type"], CLUSTER, 4)
    assert bad.value.field == "--type"
    with pytest.raises(ValidationError, match="none configured"):
        plan_exec_grow(Topics(Settings(topic_prefix="t.", job_types=())), (), CLUSTER, 4)


def test_a_limited_type_grows_only_with_every_limited_type_and_stopped_groups() -> None:
    limits = SETTINGS.model_copy(update={"concurrency_limits": {"report.generate": 3,
                                                                "image.render": 2}})  # fmt: skip
    with pytest.raises(ValidationError, match=re.escape("grow image.render with it")):
        plan_exec_grow(Topics(limits), ["report.generate"], CLUSTER, 4)
    plan = plan_exec_grow(Topics(limits), ["report.generate", "image.render"], CLUSTER, 4)
    assert plan.limited == ("report.generate", "image.render")
    with pytest.raises(ValidationError) as running:
        refuse_running(plan, {"t.jobstream.timers": 1, "t.jobstream.workers.image.render": 0})
    assert running.value.field == "--exec-partitions"
    message = str(running.value)
    assert "stop the timers and the type's workers" in message
    assert "JOBSTREAM_EXEC_PARTITIONS=4 for the timers and every worker" in message
    assert "t.jobstream.timers" in message and "workers.image.render" not in message
    refuse_running(plan, {"t.jobstream.timers": 0})  # all stopped: no refusal


def test_an_already_grown_limited_type_needs_nothing() -> None:
    grown = {**CLUSTER, **tiers("report.generate", 4)}
    assert plan_exec_grow(TOPICS, ["report.generate"], grown, 4).nothing_to_do


def test_topics_create_accepts_a_grown_execution_topic_of_an_unlimited_type_only() -> None:
    unlimited = next(TOPICS.job_type_specs("image.render"))
    limited = next(TOPICS.job_type_specs("report.generate"))
    pooled = TOPICS.spec_of(TOPICS.execution("report.generate", "high", "gpu"))
    assert pooled is not None
    assert partition_problem(unlimited, 4) is None
    assert partition_problem(unlimited, 2) is None
    assert partition_problem(unlimited, 1) == f"{unlimited.name}: 1 partitions, expected 2"
    for spec in (limited, pooled):
        assert partition_problem(spec, 4) == f"{spec.name}: 4 partitions, expected 2"
    intake = next(s for s in TOPICS.specs() if s.name == TOPICS.intake)
    assert partition_problem(intake, intake.partitions + 1) is not None
