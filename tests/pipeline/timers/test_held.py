"""Waits and sleeps at the timers, through the runtime's driver: real RocksDB, a clock of
the test's own. Signals come as any Kafka client writes them (a WorkflowSignalled)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from jobstream._pipeline.config import Settings
from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.model.held import check_held
from jobstream._pipeline.model.records import JobSpec
from jobstream._pipeline.runtime.driver import ProcessorDriver
from jobstream._pipeline.serde import Event
from jobstream._pipeline.state.batch import PartitionBatch
from jobstream._pipeline.timers.held import MAX_KEPT_SIGNALS
from jobstream._pipeline.timers.processor import TimerProcessor
from jobstream._pipeline.timers.state import TimerState
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows import step_job_id
from jobstream._pipeline.workflows.commands import STEP_LABEL, workflow_event
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL, spawned_job_id
from tests.pipeline.timers.test_workflow import data, dead_letters, lifecycle
from tests.support.workflows import rebuilt, step, step_ended

SETTINGS = Settings(fire_lead=1000)
"""With the default fire lead: a wait or a sleep still begins and ends on its instant."""
TOPICS = Topics(SETTINGS)
T0 = 1_798_000_000_000
WF = "wf-held"


def ids(name: str) -> str:
    return step_job_id("tests", WF, name)


def signal(name: str, payload: str | None = None, **fields: Any) -> Event:
    return Event("WorkflowSignalled", {
        "workflow_id": WF, "owner": "tests", "name": name, "payload": payload,
        "sent_at_ms": T0, **fields,
    })  # fmt: skip


def submit(timers: ProcessorDriver[TimerState], *steps: dict[str, Any]) -> list[Any]:
    return timers.pipe(TOPICS.intake, workflow_event("tests", steps, now_ms=timers.now_ms,
                                                     workflow_id=WF), key=WF.encode())  # fmt: skip


@pytest.fixture
def timers(tmp_path: Path) -> Iterator[ProcessorDriver[TimerState]]:
    driver = ProcessorDriver(TimerProcessor(SETTINGS), tmp_path / "a", now_ms=T0)
    yield driver
    driver.close()


def test_a_wait_ends_on_its_signal_with_the_payload_as_its_result(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, {"name": "approve", "wait": {"signal": "approved", "timeout": "1h"}},
           step("ship", "approve"))  # fmt: skip
    begun = timers.advance(0)
    assert lifecycle(begun) == [("WAITING", ids("approve"))], "no execution: no worker"
    waiting = data(begun, "WAITING", ids("approve"))
    assert waiting["waiting_for"] == ["approved"]
    assert waiting["scheduled_at_ms"] == T0 + 3_600_000, "its timeout"
    assert timers.advance(600_000) == [], "nothing until the signal"

    ended = timers.pipe(TOPICS.intake, signal("approved", '{"by": "ana"}', requested_by="ana"))
    assert lifecycle(ended) == [("SUCCEEDED", ids("approve"))]
    assert data(ended, "SUCCEEDED", ids("approve"))["result"] == '{"by": "ana"}'
    assert data(ended, "SUCCEEDED", ids("approve"))["requested_by"] == "ana"
    assert timers.advance(3_600_000) == [], "its timeout is gone with it"
    # The status processor's StepEnded releases the child, as for a job run by a worker.
    released = timers.pipe(TOPICS.intake, step_ended(ids("approve"), WF, "SUCCEEDED",
                                                     timers.now_ms, '{"by": "ana"}'))  # fmt: skip
    assert lifecycle(released) == [("SCHEDULED", ids("ship"))]
    run = data(timers.advance(0), "ExecutionRequested", ids("ship"))
    assert run["parent_results"][0]["result"] == '{"by": "ana"}'


def test_a_signal_that_comes_first_is_kept_for_its_step(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("a"), {"name": "gate", "depends_on": ["a"], "wait": {"signal": "go"}})
    timers.advance(0)
    assert timers.pipe(TOPICS.intake, signal("go", "42")) == [], "kept: no step waits yet"
    released = timers.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", T0))
    assert lifecycle(released) == [("SCHEDULED", ids("gate"))]
    ended = timers.advance(0)
    assert lifecycle(ended) == [("SUCCEEDED", ids("gate"))], "took the kept signal at once"
    assert data(ended, "SUCCEEDED", ids("gate"))["result"] == "42"


def test_a_wait_left_alone_expires_at_its_timeout_and_its_children_follow_their_rule(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, {"name": "approve", "wait": {"signal": "approved", "timeout": "30s"}},
           step("ship", "approve"), step("tell", "approve", on_parent_failure="run"))  # fmt: skip
    timers.advance(0)
    assert timers.advance(29_999) == []
    expired = timers.advance(1)
    assert lifecycle(expired) == [("EXPIRED", ids("approve"))]
    error = data(expired, "EXPIRED", ids("approve"))["error"]
    assert (error["error_type"], error["retryable"]) == ("WaitTimedOut", False)
    assert "no signal 'approved'" in error["message"]
    after = timers.pipe(TOPICS.intake, step_ended(ids("approve"), WF, "EXPIRED", timers.now_ms))
    assert sorted(lifecycle(after)) == sorted([("CANCELLED", ids("ship")),
                                               ("SCHEDULED", ids("tell"))])  # fmt: skip
    late = timers.pipe(TOPICS.intake, signal("approved"))
    assert late == [], "a signal after the wait ended is kept, harming nothing"


def test_a_rejection_cancels_the_wait(timers: ProcessorDriver[TimerState]) -> None:
    submit(timers, {"name": "approve", "wait": {"signal": "approved", "approval": True,
                                                "prompt": "Ship 1.2?"}})  # fmt: skip
    timers.advance(0)
    ended = timers.pipe(TOPICS.intake, signal("approved", reject=True, reason="not today",
                                              requested_by="bo"))  # fmt: skip
    assert lifecycle(ended) == [("CANCELLED", ids("approve"))]
    assert data(ended, "CANCELLED", ids("approve"))["detail"] == "not today"


def test_a_signal_for_one_step_takes_only_that_step_and_is_not_kept(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, {"name": "one", "wait": {"signal": "ok"}},
           {"name": "two", "wait": {"signal": "ok"}})  # fmt: skip
    timers.advance(0)
    ended = timers.pipe(TOPICS.intake, signal("ok", step="two"))
    assert lifecycle(ended) == [("SUCCEEDED", ids("two"))]
    assert timers.pipe(TOPICS.intake, signal("ok", step="two")) == [], "used: dropped"
    both = timers.pipe(TOPICS.intake, signal("ok"))
    assert lifecycle(both) == [("SUCCEEDED", ids("one"))]


def test_a_sleep_holds_no_worker_and_ends_at_its_instant(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("a"), {"name": "nap", "depends_on": ["a"], "sleep": {"for": "10m"}},
           step("b", "nap"))  # fmt: skip
    timers.advance(0)
    timers.advance(5_000)
    released = timers.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", timers.now_ms))
    assert lifecycle(released) == [("SCHEDULED", ids("nap"))]
    begun = timers.advance(0)
    assert lifecycle(begun) == [("WAITING", ids("nap"))]
    wake = timers.now_ms + 600_000
    assert data(begun, "WAITING", ids("nap"))["scheduled_at_ms"] == wake
    assert timers.advance(599_000) == [], "not even the fire lead ahead"
    assert timers.advance(999) == []
    assert lifecycle(timers.advance(1)) == [("SUCCEEDED", ids("nap"))]


def test_a_sleep_until_a_local_time_in_its_zone(timers: ProcessorDriver[TimerState]) -> None:
    # T0 is 2026-12-23T04:26:40Z; 10:00 on the 24th in Paris (UTC+1 in winter) is 09:00Z.
    submit(timers, {"name": "nap", "sleep": {"until": "2026-12-24T10:00",
                                             "timezone": "Europe/Paris"}})  # fmt: skip
    begun = timers.advance(0)
    assert data(begun, "WAITING", ids("nap"))["scheduled_at_ms"] == 1_798_102_800_000


def test_a_waiting_step_is_cancelled_with_its_workflow(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, {"name": "approve", "wait": {"signal": "approved", "timeout": "1h"}})
    timers.advance(0)
    cancel = Event("WorkflowCancelled", {"workflow_id": WF, "owner": "tests",
                                         "requested_at_ms": timers.now_ms})  # fmt: skip
    assert lifecycle(timers.pipe(TOPICS.intake, cancel)) == [("CANCELLED", ids("approve"))]
    assert timers.advance(3_600_000) == []


def test_a_restored_store_still_waits_and_keeps_its_signals(
    timers: ProcessorDriver[TimerState], tmp_path: Path,
) -> None:
    submit(timers, {"name": "one", "wait": {"signal": "ok", "timeout": "1h"}}, step("a"),
           {"name": "two", "depends_on": ["a"], "wait": {"signal": "later"}})  # fmt: skip
    timers.advance(0)
    timers.pipe(TOPICS.intake, signal("later", '"kept"'))
    again = rebuilt(timers, TimerProcessor(SETTINGS), tmp_path / "b")
    try:
        assert lifecycle(again.pipe(TOPICS.intake, signal("ok"))) == [("SUCCEEDED", ids("one"))]
        again.pipe(TOPICS.intake, step_ended(ids("a"), WF, "SUCCEEDED", again.now_ms))
        ended = again.advance(0)
        assert data(ended, "SUCCEEDED", ids("two"))["result"] == '"kept"'
    finally:
        again.close()


def test_signals_for_a_workflow_not_here_go_to_the_dead_letters_with_the_reason(
    timers: ProcessorDriver[TimerState],
) -> None:
    unknown = timers.pipe(TOPICS.intake, signal("ok"))
    assert dead_letters(unknown)[0].startswith(
        "workflow_id: tests's workflow wf-held is not running here: never submitted, or ended")
    submit(timers, {"name": "one", "wait": {"signal": "ok"}})
    other_owner = timers.pipe(TOPICS.intake, signal("ok", owner="mallory"))
    assert dead_letters(other_owner)[0].startswith("workflow_id: mallory's workflow")
    bad = timers.pipe(TOPICS.intake, signal("ok", payload="{not json"))
    assert dead_letters(bad)[0].startswith("payload: is not JSON")


@pytest.mark.parametrize(("held", "field", "message"), [
    ({"wait": {}}, "steps.0.spec.params.signal", "must be a non-blank string"),
    ({"wait": {"signal": "a", "timeout": "soon"}}, "steps.0.spec.params.timeout",
     "'soon' is not a duration"),
    ({"wait": {"signal": "a", "timeot": "1h"}}, "steps.0.spec.params.timeot", "unknown"),
    ({"sleep": {}}, "steps.0.spec.params", "a sleep needs one of"),
    ({"sleep": {"until": "2026-12-24T10:00", "timezone": "Mars/Olympus"}},
     "steps.0.spec.params.timezone", "unknown time zone"),
    ({"sleep": {"for": "1m"}, "job_type": "data.process"}, "steps.0.sleep", "no job_type"),
])  # fmt: skip
def test_a_held_step_with_bad_params_is_refused_naming_the_field(
    held: dict[str, Any], field: str, message: str,
) -> None:
    with pytest.raises(ValidationError) as refused:
        workflow_event("tests", [{"name": "s", **held}], now_ms=T0, workflow_id=WF)
    assert refused.value.field == field
    assert message in refused.value.message


def test_a_wait_outside_a_workflow_is_refused() -> None:
    spec = JobSpec(job_type="jobstream.wait", owner="tests", params='{"signal": "a"}')
    with pytest.raises(ValidationError, match="workflow_id: a wait step belongs to a workflow"):
        check_held(spec, None)


def test_a_map_runs_an_item_per_element_a_few_at_a_time_and_the_join_gets_them_in_order(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("list"),
           {"name": "render", "depends_on": ["list"],
            "map": {"over": "list", "job_type": "image.render", "params": {"size": 64},
                    "max_concurrency": 2}},
           step("join", "render"))  # fmt: skip
    timers.advance(0)
    released = timers.pipe(TOPICS.intake, step_ended(ids("list"), WF, "SUCCEEDED", T0,
                                                     '["a", "b", "c"]'))  # fmt: skip
    assert lifecycle(released) == [("SCHEDULED", ids("render"))]
    begun = timers.advance(0)
    items = [ids(f"render[{i}]") for i in range(3)]
    assert sorted(lifecycle(begun)) == sorted([("SCHEDULED", items[0]), ("SCHEDULED", items[1]),
                                               ("BLOCKED", items[2]), ("WAITING", ids("render"))])
    fired = timers.advance(0)
    runs = [data(fired, "ExecutionRequested", item) for item in items[:2]]
    assert [orjson.loads(run["spec"]["params"]) for run in runs] == [
        {"size": 64, "item": "a", "index": 0}, {"size": 64, "item": "b", "index": 1}]
    assert runs[0]["spec"]["job_type"] == "image.render"

    freed = timers.pipe(TOPICS.intake, step_ended(items[1], WF, "SUCCEEDED", T0, '"B"'))
    assert lifecycle(freed) == [("SCHEDULED", items[2])], "a slot freed: the next item"
    timers.advance(0)
    timers.pipe(TOPICS.intake, step_ended(items[2], WF, "SUCCEEDED", T0, '"C"'))
    ended = timers.pipe(TOPICS.intake, step_ended(items[0], WF, "SUCCEEDED", T0, '"A"'))
    assert lifecycle(ended) == [("SUCCEEDED", ids("render"))]
    assert data(ended, "SUCCEEDED", ids("render"))["result"] == '{"items":3}'
    timers.pipe(TOPICS.intake, step_ended(ids("render"), WF, "SUCCEEDED", T0, '{"items":3}'))
    join = data(timers.advance(0), "ExecutionRequested", ids("join"))
    assert [(r["step"], r["result"]) for r in join["parent_results"]] == [
        ("render", '{"items":3}'), ("render[0]", '"A"'), ("render[1]", '"B"'),
        ("render[2]", '"C"')]  # fmt: skip


def begun_map(timers: ProcessorDriver[TimerState], name: str, after: str) -> list[str]:
    """A workflow whose map ``name`` over [1, 2, 3] runs one item at a time, ``after``
    waiting for it, begun: the items' job ids."""
    submit(timers, step("list"),
           {"name": name, "depends_on": ["list"],
            "map": {"over": "list", "job_type": "image.render", "max_concurrency": 1}},
           step(after, name))  # fmt: skip
    timers.advance(0)
    timers.pipe(TOPICS.intake, step_ended(ids("list"), WF, "SUCCEEDED", T0, "[1, 2, 3]"))
    timers.advance(0)
    return [ids(f"{name}[{i}]") for i in range(3)]


def test_a_failed_item_cancels_the_rest_of_its_map(timers: ProcessorDriver[TimerState]) -> None:
    items = begun_map(timers, "render", "join")
    failed = timers.pipe(TOPICS.intake, step_ended(items[0], WF, "DEAD_LETTERED", T0))
    assert sorted(lifecycle(failed)) == sorted([("CANCELLED", items[1]), ("CANCELLED", items[2])])
    again = timers.pipe(TOPICS.intake, step_ended(items[1], WF, "CANCELLED", T0))
    assert again == [], "the rest is cancelled once, at the first failure"
    ended = timers.pipe(TOPICS.intake, step_ended(items[2], WF, "CANCELLED", T0))
    assert lifecycle(ended) == [("CANCELLED", ids("render"))]
    assert "render[0] ended DEAD_LETTERED" in data(ended, "CANCELLED", ids("render"))["detail"]


def test_a_map_over_a_result_that_is_not_a_list_ends_naming_why(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("list"), {"name": "render", "depends_on": ["list"],
                                  "map": {"over": "list", "job_type": "image.render"}})  # fmt: skip
    timers.advance(0)
    timers.pipe(TOPICS.intake, step_ended(ids("list"), WF, "SUCCEEDED", T0, '{"a": 1}'))
    ended = timers.advance(0)
    assert lifecycle(ended) == [("CANCELLED", ids("render"))]
    assert data(ended, "CANCELLED", ids("render"))["detail"] == (
        "map over 'list': its result is not a JSON list")


def test_a_map_of_ten_thousand_items_joins_all_of_them_in_order(
    timers: ProcessorDriver[TimerState],
) -> None:
    n = 10_000
    submit(timers, step("list"),
           {"name": "m", "depends_on": ["list"],
            "map": {"over": "list", "job_type": "image.render", "max_concurrency": 500}},
           step("join", "m"))  # fmt: skip
    timers.advance(0)
    timers.pipe(TOPICS.intake, step_ended(ids("list"), WF, "SUCCEEDED", T0,
                                          orjson.dumps(list(range(n))).decode()))  # fmt: skip
    timers.advance(0)
    started = 0
    for i in range(n):
        started += len([e for e in lifecycle(timers.advance(0)) if e[0] == "RUN"])
        timers.pipe(TOPICS.intake, step_ended(ids(f"m[{i}]"), WF, "SUCCEEDED", T0, str(i * 2)))
    started += len([e for e in lifecycle(timers.advance(0)) if e[0] == "RUN"])
    assert started == n, "every item ran once"
    end = timers.pipe(TOPICS.intake, step_ended(ids("m"), WF, "SUCCEEDED", T0, '{"items":10000}'))
    assert lifecycle(end) == [("SCHEDULED", ids("join"))]
    join = data(timers.advance(0), "ExecutionRequested", ids("join"))
    results = join["parent_results"][1:]
    assert [int(r["result"]) for r in results] == [i * 2 for i in range(n)]


def spawned(holder: str, key: str, now_ms: int) -> Event:
    """The JobSubmitted of a child ``ctx.spawn`` started from step ``holder``."""
    child = spawned_job_id("tests", WF, holder, key)
    return Event("JobSubmitted", {
        "job_id": child, "workflow_id": WF, "idempotency_key": None, "submitted_at_ms": now_ms,
        "spec": {"job_type": "data.process", "owner": "tests", "params": "{}",
                 "labels": {SPAWNED_BY_LABEL: ids(holder), STEP_LABEL: f"{holder}/{key}"}},
    })  # fmt: skip


def test_the_dependents_of_a_spawner_wait_for_its_children(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("fan"), step("after", "fan"))
    timers.advance(0)
    kids = [spawned_job_id("tests", WF, "fan", key) for key in ("0", "1")]
    for key in ("0", "1"):
        assert lifecycle(timers.pipe(TOPICS.intake, spawned("fan", key, timers.now_ms)))[0] == (
            "SCHEDULED", spawned_job_id("tests", WF, "fan", key))
    again = timers.pipe(TOPICS.intake, spawned("fan", "0", timers.now_ms))
    assert again == [], "a retried run's child is the child it started"
    assert timers.pipe(TOPICS.intake, step_ended(ids("fan"), WF, "SUCCEEDED", T0, '"ok"')) == [], (
        "its children still run: its dependents wait")
    assert timers.pipe(TOPICS.intake, step_ended(kids[0], WF, "SUCCEEDED", T0)) == []
    released = timers.pipe(TOPICS.intake, step_ended(kids[1], WF, "DEAD_LETTERED", T0))
    assert lifecycle(released) == [("CANCELLED", ids("after"))]
    assert data(released, "CANCELLED", ids("after"))["detail"] == (
        f"parent {ids('fan')} ended DEAD_LETTERED"), "the worst of its end and its children's"


def test_a_trigger_or_a_new_time_does_not_end_a_step_that_waits(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, {"name": "gate", "wait": {"signal": "go", "timeout": "1h"}},
           {"name": "forever", "wait": {"signal": "go-on"}})  # fmt: skip
    timers.advance(0)
    for name in ("gate", "forever"):
        trigger = Event("JobTriggered", {"job_id": ids(name), "workflow_id": WF,
                                         "requested_at_ms": timers.now_ms})  # fmt: skip
        moved = Event("ScheduleChanged", {"job_id": ids(name), "workflow_id": WF,
                                          "requested_at_ms": timers.now_ms, "action": "UPDATE",
                                          "run_at_ms": timers.now_ms})  # fmt: skip
        assert timers.pipe(TOPICS.intake, trigger) == []
        assert timers.pipe(TOPICS.intake, moved) == []
    assert timers.advance(1000) == [], "both still wait"
    assert lifecycle(timers.pipe(TOPICS.intake, signal("go-on"))) == [("SUCCEEDED", ids("forever"))]


def test_a_step_name_of_an_item_or_a_child_shape_is_refused() -> None:
    for name in ("render[0]", "split/page-1"):
        with pytest.raises(ValidationError, match=r"steps\.0\.name: must not contain"):
            workflow_event("tests", [step(name)], now_ms=T0, workflow_id=WF)


def test_cancelling_a_map_cancels_its_items_and_ends_its_wait(
    timers: ProcessorDriver[TimerState],
) -> None:
    items = begun_map(timers, "m", "after")
    cancel = Event("JobCancelled", {"job_id": ids("m"), "workflow_id": WF,
                                    "requested_at_ms": timers.now_ms})  # fmt: skip
    cancelled = timers.pipe(TOPICS.intake, cancel)
    assert ("CANCELLED", ids("m")) in lifecycle(cancelled)
    assert {("CANCELLED", items[1]), ("CANCELLED", items[2])} <= set(lifecycle(cancelled))
    # The map's end waits for its items'; then its dependents follow its CANCELLED.
    assert timers.pipe(TOPICS.intake, step_ended(ids("m"), WF, "CANCELLED", T0)) == []
    for item in items[1:]:
        assert timers.pipe(TOPICS.intake, step_ended(item, WF, "CANCELLED", T0)) == []
    last = timers.pipe(TOPICS.intake, step_ended(items[0], WF, "SUCCEEDED", T0))
    assert lifecycle(last) == [("CANCELLED", ids("after"))]


def test_a_spawner_whose_children_failed_first_releases_as_failed(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("fan"), step("after", "fan"))
    timers.advance(0)
    timers.pipe(TOPICS.intake, spawned("fan", "0", timers.now_ms))
    child = spawned_job_id("tests", WF, "fan", "0")
    assert timers.pipe(TOPICS.intake, step_ended(child, WF, "DEAD_LETTERED", T0)) == []
    released = timers.pipe(TOPICS.intake, step_ended(ids("fan"), WF, "SUCCEEDED", T0))
    assert lifecycle(released) == [("CANCELLED", ids("after"))]


def test_a_workflow_keeps_a_bounded_number_of_signals_and_forgets_them_when_cancelled(
    timers: ProcessorDriver[TimerState],
) -> None:
    submit(timers, step("a"), {"name": "gate", "depends_on": ["a"], "wait": {"signal": "go"}})
    for n in range(MAX_KEPT_SIGNALS):
        assert timers.pipe(TOPICS.intake, signal(f"s-{n}")) == []
    assert timers.pipe(TOPICS.intake, signal("s-0", '"again"')) == [], "a kept name: replaced"
    refused = dead_letters(timers.pipe(TOPICS.intake, signal("one-more")))
    assert refused == [f"name: workflow {WF} keeps {MAX_KEPT_SIGNALS} signals no step has "
                       "taken: no more are kept"]  # fmt: skip
    cancel = Event("WorkflowCancelled", {"workflow_id": WF, "owner": "tests",
                                         "requested_at_ms": timers.now_ms})  # fmt: skip
    timers.pipe(TOPICS.intake, cancel)
    assert TimerState(PartitionBatch(timers.store())).nodes.kept_signals("tests", WF) == []
