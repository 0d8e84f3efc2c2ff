"""A workflow's graph checked before anything runs: known parents, no cycle, a bounded size.

Steps are named; each lists the names of its parents. :func:`topological_order` returns
the names with every parent before its children (the order the timers admit them in), or
raises :class:`~jobstream._pipeline.errors.ValidationError` naming the record path at fault: the
unknown parent (``steps.3.depends_on.0``), the cycle (``steps``: ``cycle: a -> b -> a``),
or the size.
"""

from __future__ import annotations

from collections.abc import Sequence
from graphlib import CycleError, TopologicalSorter

from jobstream._pipeline.errors import ValidationError

MAX_STEPS = 10_000
"""Steps in one workflow: one record on jobs.intake (2 MiB at most) and one transaction of
the timers hold them all."""


def topological_order(steps: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """Step names, parents first; ``steps`` is (name, parent names) in submission order.

    Among steps free to go at the same time the submission order is kept, so the order is
    the same on every replay.
    """
    if not steps:
        raise ValidationError("steps", "a workflow needs at least one step")
    if len(steps) > MAX_STEPS:
        raise ValidationError("steps", f"has {len(steps)} steps, more than {MAX_STEPS}")
    position: dict[str, int] = {}
    for i, (name, _) in enumerate(steps):
        if name in position:
            raise ValidationError(f"steps.{i}.name", f"{name!r} is also step {position[name]}")
        position[name] = i
    for i, (name, parents) in enumerate(steps):
        seen: set[str] = set()
        for j, parent in enumerate(parents):
            if parent not in position:
                raise ValidationError(
                    f"steps.{i}.depends_on.{j}",
                    f"unknown step {parent!r} (step {name!r} depends on it)",
                )
            if parent == name:
                raise ValidationError(
                    f"steps.{i}.depends_on.{j}", f"step {name!r} depends on itself"
                )
            if parent in seen:
                raise ValidationError(f"steps.{i}.depends_on", f"lists {parent!r} twice")
            seen.add(parent)
    sorter = TopologicalSorter({name: parents for name, parents in steps})
    try:
        sorter.prepare()
    except CycleError as exc:
        # graphlib lists each node before a node it precedes: parent -> child.
        raise ValidationError("steps", "cycle: " + " -> ".join(exc.args[1])) from None
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        order.extend(ready)
        sorter.done(*ready)
    return order
