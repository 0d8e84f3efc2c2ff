"""The workflow graph's steps (GET /api/v1/workflows/{id}): a map's items and spawned
children counted at the step that started them, never steps of their own; waits, sleeps
and maps with what their parameters ask for."""

from __future__ import annotations

from typing import Any

import orjson

from jobstream._connectors.api.workflows import graph_steps, held_params, member_holders
from jobstream._pipeline.workflows.members import SPAWNED_BY_LABEL, item_step, spawned_step


def doc(job_id: str, step: str, state: str = "SUCCEEDED", job_type: str = "data.process",
        depends_on: tuple[str, ...] = (), created: int = 1,
        **more: Any) -> dict[str, Any]:  # fmt: skip
    return {"job_id": job_id, "step": step, "job_type": job_type, "state": state,
            "depends_on": list(depends_on), "created_at_ms": created, "labels": {},
            "owner": "acme", "attempt": 1, "updated_at_ms": 5, **more}  # fmt: skip


PARAMS = {
    "W": {"signal": "approved", "timeout": "1h", "prompt": "Ship it?", "approval": True},
    "S": {"for": "30s"},
    "M": {"over": "list", "job_type": "image.render", "max_concurrency": 5},
}


def workflow(items: int) -> list[dict[str, Any]]:
    """list -> render (a map of ``items``) -> report; a wait and a sleep before report; one
    child spawned by report and one by item 0 (which counts at the map)."""
    states = ["SUCCEEDED", "RUNNING", "DEAD_LETTERED", "BLOCKED"]
    members = [doc(f"I{i}", item_step("render", i), states[i % 4], created=3 + i)
               for i in range(items)]  # fmt: skip
    return [
        doc("R", "report", "BLOCKED", depends_on=("M", "W", "S"), created=2),
        *members,
        doc("L", "list"),
        doc("W", "gate", "WAITING", "jobstream.wait", waiting_for=["approved"],
            scheduled_at_ms=99),
        doc("S", "pause", "WAITING", "jobstream.sleep", scheduled_at_ms=77),
        doc("M", "render", "WAITING", "jobstream.map", depends_on=("L",)),
        doc("C", spawned_step("report", "mail"), "QUEUED",
            labels={SPAWNED_BY_LABEL: "R"}),
        doc("G", spawned_step(item_step("render", 0), "thumb"), "RUNNING",
            labels={SPAWNED_BY_LABEL: "I0"}),
    ]


def stored(job_id: str) -> bytes | None:
    return orjson.dumps(PARAMS[job_id]) if job_id in PARAMS else None


def test_members_are_counted_at_their_holder_and_steps_come_parents_first() -> None:
    asked: list[str] = []

    def params_of(job_id: str) -> bytes | None:
        asked.append(job_id)
        return stored(job_id)

    steps = graph_steps(workflow(10), params_of)
    assert [step.job_id for step in steps][-1] == "R"
    assert {step.job_id for step in steps} == {"L", "W", "S", "M", "R"}, "no member is a step"
    by_id = {step.job_id: step for step in steps}
    render = by_id["M"]
    assert render.kind == "map" and render.items is not None
    assert render.items.total == 10
    assert render.items.by_state == {"BLOCKED": 2, "DEAD_LETTERED": 2, "RUNNING": 3,
                                     "SUCCEEDED": 3}  # fmt: skip
    assert render.children is not None and render.children.by_state == {"RUNNING": 1}
    assert by_id["R"].children is not None and by_id["R"].children.by_state == {"QUEUED": 1}
    assert by_id["R"].items is None and by_id["L"].children is None
    assert by_id["R"].depends_on == ["M", "W", "S"]
    assert sorted(asked) == ["M", "S", "W"], "parameters read for held steps only"


def test_a_map_of_ten_thousand_items_is_one_step() -> None:
    steps = graph_steps(workflow(10_000), stored)
    assert len(steps) == 5
    render = next(step for step in steps if step.kind == "map")
    assert render.items is not None and render.items.total == 10_000
    assert sum(render.items.by_state.values()) == 10_000


def test_waits_sleeps_and_maps_say_what_they_ask_for() -> None:
    by_id = {step.job_id: step for step in graph_steps(workflow(2), stored)}
    gate, pause, render = by_id["W"], by_id["S"], by_id["M"]
    assert (gate.kind, pause.kind, by_id["L"].kind) == ("wait", "sleep", "job")
    assert gate.waiting_for == ["approved"] and gate.scheduled_at_ms == 99
    assert gate.held is not None
    assert (gate.held.signal, gate.held.prompt, gate.held.approval, gate.held.timeout_ms) == (
        "approved", "Ship it?", True, 3_600_000)
    assert pause.held is not None and pause.held.for_ms == 30_000 and pause.scheduled_at_ms == 77
    assert render.held is not None
    assert (render.held.over, render.held.item_type, render.held.max_concurrency) == (
        "list", "image.render", 5)
    assert by_id["L"].held is None


def test_a_step_named_like_an_item_of_no_map_is_a_step() -> None:
    docs = [doc("A", "render[3]"), doc("B", "other", labels={SPAWNED_BY_LABEL: "gone"})]
    assert member_holders(docs) == {}
    assert [step.job_id for step in graph_steps(docs, stored)] == ["A", "B"]


def test_a_cycle_of_spawned_by_labels_ends() -> None:
    docs = [doc("A", "a", labels={SPAWNED_BY_LABEL: "B"}),
            doc("B", "b", labels={SPAWNED_BY_LABEL: "A"})]  # fmt: skip
    assert member_holders(docs) == {}, "neither holds the other: both are drawn"
    assert {step.job_id for step in graph_steps(docs, stored)} == {"A", "B"}


def test_unreadable_or_missing_parameters_give_no_held() -> None:
    assert held_params("jobstream.wait", None) is None
    assert held_params("jobstream.wait", b"not json") is None
    assert held_params("jobstream.wait", b'{"timeout": "1h"}') is None, "no signal: not a wait"
    assert held_params("data.process", b"{}") is None
    sleep = held_params("jobstream.sleep", b'{"until_ms": 1796000000000}')
    assert sleep is not None and sleep.until_ms == 1796000000000 and sleep.for_ms is None
