"""The cluster-wide bound on execution topics (``JOBSTREAM_MAX_EXECUTION_TOPICS``).

A job whose type needs an execution topic past the bound is refused at firing like a
type whose topic the broker refuses: to jobs.intake.dlq with a reason naming the bound,
CANCELLED with the same detail, and the partition goes on firing the jobs after it.
"""

from __future__ import annotations

from pathlib import Path

from jobstream._pipeline.config import Settings
from jobstream._pipeline.timers.processor import refusal_reason
from jobstream._pipeline.topics import Topics
from tests.support.refusals import refused_after_a_first_type

BOUND = Topics(Settings(topic_prefix="p.", max_execution_topics=3)).execution_bound()


def test_topics_fit_in_name_order_until_the_bound_then_are_refused() -> None:
    present = ["p.jobs.exec.a.normal", "p.jobs.intake", "q.jobs.exec.z.normal"]
    refused = BOUND.refusals(present, ["p.jobs.exec.d.high", "p.jobs.exec.c.normal",
                                       "p.jobs.exec.b.low", "p.jobs.dlq.d"])  # fmt: skip
    assert list(refused) == ["p.jobs.exec.d.high"]
    assert refused["p.jobs.exec.d.high"] == (
        "the cluster holds 3 execution topics, the most JOBSTREAM_MAX_EXECUTION_TOPICS (3) allows"
    )


def test_nothing_new_is_refused_under_the_bound_nor_anything_but_execution_topics() -> None:
    assert BOUND.refusals(["p.jobs.exec.a.normal"], ["p.jobs.exec.b.normal"]) == {}
    full = [f"p.jobs.exec.{n}.normal" for n in "abc"]
    assert BOUND.refusals(full, ["p.jobs.dlq.d", "p.jobs.status"]) == {}
    assert BOUND.refusals([*full, "p.jobs.exec.d.normal"], ["p.jobs.exec.e.low"]) != {}


def test_the_reason_names_the_bound_and_no_other_type() -> None:
    topics = Topics(Settings(topic_prefix="p."))
    why = BOUND.refusals([f"p.jobs.exec.{n}.normal" for n in "abc"], ["p.jobs.exec.d.normal"])
    reason = refusal_reason(topics, "d", "p.jobs.exec.d.normal", why["p.jobs.exec.d.normal"])
    assert reason == ("spec.job_type: 'd' cannot be routed: its topic p.jobs.exec.d.normal was "
                      "refused: the cluster holds 3 execution topics, the most "
                      "JOBSTREAM_MAX_EXECUTION_TOPICS (3) allows")  # fmt: skip


def test_a_type_past_the_bound_is_dead_lettered_naming_it(topics: Topics, tmp_path: Path) -> None:
    prefix = topics.execution_bound().prefix
    made = sum(1 for spec in topics.specs() if spec.name.startswith(prefix))
    most = made + 1  # the fixture's types' topics, and the first new type's
    settings = topics.settings.model_copy(update={"max_execution_topics": most})
    _, reason = refused_after_a_first_type(settings, topics, tmp_path, first="bound.first",
                                           refused="bound.past", after="bound.first")
    assert reason.startswith(f"spec.job_type: 'bound.past' cannot be routed: its topic "
                             f"{topics.execution('bound.past', 'normal')} was refused: the "
                             f"cluster holds {most} execution topics, the most "
                             f"JOBSTREAM_MAX_EXECUTION_TOPICS ({most}) allows")  # fmt: skip
