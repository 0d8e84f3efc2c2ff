"""When a child may run: the rules that hold a job until its parents succeed.

Pure: a child's parents and how each ended (None: not yet) in, a :class:`Gate` out. The
timers apply it when a child is submitted (:func:`admit`) and each time one of its
parents ends (:func:`after_parent_ended`).

- Every parent SUCCEEDED: RUN.
- A parent ended DEAD_LETTERED, CANCELLED or EXPIRED: with ``on_parent_failure=CANCEL`` (the
  default) the child is CANCELLED at once, the reason naming that parent, even while
  other parents still run; with ``RUN`` that parent counts as done.
- Otherwise WAIT for the parents not ended yet. A parent being retried has not ended:
  it releases nothing until it succeeds (or is dead-lettered).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from jobstream._pipeline.model.records import ParentFailurePolicy, StepOutcome

FAILED_OUTCOMES = frozenset(
    {StepOutcome.DEAD_LETTERED, StepOutcome.CANCELLED, StepOutcome.EXPIRED}
)


class GateAction(StrEnum):
    WAIT = "WAIT"
    RUN = "RUN"
    CANCEL = "CANCEL"


@dataclass(frozen=True, slots=True)
class Gate:
    action: GateAction
    waiting: tuple[str, ...] = ()
    """WAIT: the parents not ended yet, in the child's order."""
    reason: str | None = None
    """CANCEL: which parent ended how."""


def admit(parents: Mapping[str, str | None],
          policy: ParentFailurePolicy = ParentFailurePolicy.CANCEL) -> Gate:  # fmt: skip
    """The gate of a child whose parents ended as ``parents`` says (None: not yet)."""
    if policy == ParentFailurePolicy.CANCEL:
        for parent, outcome in parents.items():
            if outcome in FAILED_OUTCOMES:
                return Gate(GateAction.CANCEL, reason=f"parent {parent} ended {outcome}")
    waiting = tuple(parent for parent, outcome in parents.items() if outcome is None)
    if waiting:
        return Gate(GateAction.WAIT, waiting)
    return Gate(GateAction.RUN)


def after_parent_ended(waiting: Sequence[str], parent: str, outcome: str,
                       policy: ParentFailurePolicy = ParentFailurePolicy.CANCEL,
                       ) -> Gate:  # fmt: skip
    """The gate of a child waiting for ``waiting`` once ``parent`` has ended ``outcome``.

    Parents no longer waited for have already succeeded (or failed under RUN): only the
    waited ones matter. An outcome of a parent not waited for changes nothing.
    """
    if parent not in waiting:
        return Gate(GateAction.WAIT, tuple(waiting)) if waiting else Gate(GateAction.RUN)
    ended: dict[str, str | None] = {p: None for p in waiting}
    ended[parent] = outcome
    return admit(ended, policy)
