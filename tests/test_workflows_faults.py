"""A workflow whose timer process and worker are killed with SIGKILL while it runs.

The timers are killed while the root runs, so the root's StepEnded waits in jobs.intake
for a timer process restored from its changelog; the worker is killed in the middle of a
step, which is declared LOST at the end of its lease and retried. From jobs.events: every
step fired once per attempt, none started before each of its parents had succeeded, the
steps the worker's death did not touch ran exactly once, and all of them succeeded.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from jobstream._ops.stack import Stack
from jobstream._pipeline.jobs.client import JobClient
from jobstream._pipeline.model.job import RetryPolicy
from jobstream._pipeline.topics import Topics
from tests.support.stack import pipeline_fixtures
from tests.support.workflow_runs import assert_released_after_parents, history
from tests.support.workflow_runs import settle as settle_as

OWNER = "wf-faults"
settle = partial(settle_as, owner=OWNER)


pipeline_topics, stack = pipeline_fixtures("wff", lease_s=3)


def step(name: str, *parents: str, sleep_s: float = 0) -> dict[str, Any]:
    return {
        "name": name,
        "depends_on": list(parents),
        "job_type": "data.process",
        "params": {"sleep_s": sleep_s},
        "retry": RetryPolicy(initial_backoff_ms=200),
    }


def crash_and_restart(stack: Stack, name: str) -> None:
    """SIGKILL one component, then start it again as it was (same id, state folder)."""
    part, _ = stack.processes[name]
    stack.kill(name)
    stack.start([part])


def test_every_step_runs_after_its_parents_through_a_timer_and_a_worker_crash(
    stack: Stack,
    pipeline_topics: Topics,
) -> None:
    settings = pipeline_topics.settings
    fan = [f"fan-{i}" for i in range(6)]
    steps = [step("root", sleep_s=2), *(step(name, "root", sleep_s=0.2) for name in fan),
             step("slow", *fan, sleep_s=4), step("after-1", "slow"), step("after-2", "slow"),
             step("last", "after-1", "after-2")]  # fmt: skip
    parents = {**{name: ["root"] for name in fan}, "slow": fan, "after-1": ["slow"],
               "after-2": ["slow"], "last": ["after-1", "after-2"]}  # fmt: skip
    with JobClient(settings) as client:
        submitted = client.submit_workflow(steps, owner=OWNER)

    settle(settings, submitted, {"root": {"RUNNING"}, "slow": {"BLOCKED"}})
    crash_and_restart(stack, "timers")
    settle(settings, submitted, {"slow": {"RUNNING"}})
    worker = next(name for name in stack.processes if name.startswith("worker-"))
    crash_and_restart(stack, worker)

    done = settle(settings, submitted, {name: {"SUCCEEDED"} for name in submitted.steps},
                  timeout_s=180)  # fmt: skip
    events = history(settings, submitted)
    assert_released_after_parents(events, parents)
    for name in submitted.steps.keys() - {"slow"}:
        starts = [e for e in events[name] if e["kind"] == "STARTED"]
        assert len(starts) == 1, f"{name} started {len(starts)} times"
    # The run the worker's death interrupted ran again (redelivered, or retried once its
    # lease ended); a success beyond the first is reported as a duplicate.
    kinds = [e["kind"] for e in events["slow"]]
    assert kinds.count("STARTED") >= 2, kinds
    assert 1 <= kinds.count("SUCCEEDED") <= 1 + kinds.count("DUPLICATE"), kinds
    assert done["slow"].state == "SUCCEEDED"
    fired_after_slow = [e for e in events["after-1"] if e["kind"] == "FIRED"]
    assert len(fired_after_slow) == 1, "a child is released once whatever its parent went through"
