"""A workflow's graph: order, unknown parents, cycles and the size limit."""

from __future__ import annotations

import itertools

import pytest

from jobstream._pipeline.errors import ValidationError
from jobstream._pipeline.workflows import MAX_STEPS, topological_order


def refusal(steps: list[tuple[str, list[str]]]) -> ValidationError:
    with pytest.raises(ValidationError) as refused:
        topological_order(steps)
    return refused.value


def test_parents_come_first_and_ties_keep_the_submission_order() -> None:
    steps = [("report", ["chart", "table"]), ("table", ["load"]), ("chart", ["load"]),
             ("load", [])]  # fmt: skip
    assert topological_order(steps) == ["load", "table", "chart", "report"]


def test_an_unknown_parent_is_named_with_its_step() -> None:
    error = refusal([("a", []), ("b", ["a", "nope"])])
    assert error.field == "steps.1.depends_on.1"
    assert "unknown step 'nope'" in error.message and "'b'" in error.message


def test_a_cycle_is_refused_naming_the_cycle() -> None:
    error = refusal([("a", ["c"]), ("b", ["a"]), ("c", ["b"]), ("d", [])])
    assert error.field == "steps"
    cycle = error.message.removeprefix("cycle: ").split(" -> ")
    assert cycle[0] == cycle[-1] and sorted(cycle[:-1]) == ["a", "b", "c"]
    # each step's parent precedes it along the cycle as written
    parents = {"a": "c", "b": "a", "c": "b"}
    assert all(parents[child] == parent for parent, child in itertools.pairwise(cycle))


def test_self_dependency_duplicates_and_repeated_names_are_refused() -> None:
    assert refusal([("a", ["a"])]).field == "steps.0.depends_on.0"
    assert refusal([("a", []), ("b", ["a", "a"])]).field == "steps.1.depends_on"
    assert refusal([("a", []), ("a", [])]).field == "steps.1.name"


def test_size_limits() -> None:
    assert refusal([]).field == "steps"
    too_many = [(f"s{i}", []) for i in range(MAX_STEPS + 1)]
    assert "more than 10000" in refusal(too_many).message
    assert len(topological_order(too_many[:MAX_STEPS])) == MAX_STEPS
