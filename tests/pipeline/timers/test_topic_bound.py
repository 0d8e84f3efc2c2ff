"""The cluster-wide bound on execution topics (``JOBSTREAM_MAX_EXECUTION_TOPICS``).

A job whose type needs an execution topic past the bound is refused at firing like a
type whose topic the broker refuses: to jobs.intake.dlq with a reason naming the bound,
CANCELLED with the same detail, and the partition goes on firing the jobs after it.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import Settings
from pipeline.timers.runner import TIMER_OPTIONS, refusal_reason, timer_runner
from pipeline.topics import Topics
from tests.pipeline.timers.test_types_on_demand import _dead_letter_reason
from tests.support.jobs import submitted
from tests.support.pipeline import in_thread, produce
from tests.support.reader import TopicReader
from tests.support.waiting import wait_for

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
    first = submitted(job_type="bound.first")
    past = submitted(job_type="bound.past")
    after = [submitted(job_type="bound.first") for _ in range(3)]
    events = TopicReader(settings, topics.events, settings.events_partitions)
    options = TIMER_OPTIONS.evolve(instance_id="a", state_dir=tmp_path / "state")
    with in_thread(timer_runner(settings, options)):
        produce(settings, topics.intake, [first])
        wait_for(lambda: events.of_job(first.data["job_id"], kind="FIRED"), timeout_s=60,
                 what="the first type fired")  # fmt: skip
        produce(settings, topics.intake, [past, *after])
        cancelled = wait_for(lambda: events.of_job(past.data["job_id"], kind="CANCELLED"),
                             timeout_s=60, what="the job past the bound refused")  # fmt: skip
        wait_for(lambda: all(events.of_job(job.data["job_id"], kind="FIRED") for job in after),
                 timeout_s=60, what="the jobs after it fired")  # fmt: skip
        assert not events.of_job(past.data["job_id"], kind="FIRED")
    events.close()

    reason = _dead_letter_reason(settings, topics.intake_dlq)
    assert cancelled[0]["detail"] == reason
    assert reason.startswith(f"spec.job_type: 'bound.past' cannot be routed: its topic "
                             f"{topics.execution('bound.past', 'normal')} was refused: the "
                             f"cluster holds {most} execution topics, the most "
                             f"JOBSTREAM_MAX_EXECUTION_TOPICS ({most}) allows")  # fmt: skip
