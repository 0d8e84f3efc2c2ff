"""When a child may run: the release rules, pure."""

from __future__ import annotations

from jobstream._pipeline.workflows import Gate, GateAction, admit, after_parent_ended

WAIT, RUN, CANCEL = GateAction.WAIT, GateAction.RUN, GateAction.CANCEL


def test_a_child_waits_for_every_parent_not_ended() -> None:
    assert admit({"A": None, "B": "SUCCEEDED", "C": None}) == Gate(WAIT, ("A", "C"))
    assert admit({"A": "SUCCEEDED"}) == Gate(RUN)
    assert admit({}) == Gate(RUN)


def test_a_failed_parent_cancels_at_once_naming_it_even_while_others_run() -> None:
    gate = admit({"A": None, "B": "DEAD_LETTERED"})
    assert gate.action is CANCEL and gate.reason == "parent B ended DEAD_LETTERED"
    assert admit({"A": "CANCELLED"}).reason == "parent A ended CANCELLED"


def test_with_run_a_failed_parent_counts_as_ended() -> None:
    assert admit({"A": None, "B": "DEAD_LETTERED"}, "RUN") == Gate(WAIT, ("A",))
    assert admit({"A": "CANCELLED", "B": "SUCCEEDED"}, "RUN") == Gate(RUN)


def test_each_parent_end_narrows_the_wait_until_release() -> None:
    gate = after_parent_ended(["B", "C"], "B", "SUCCEEDED")
    assert gate == Gate(WAIT, ("C",))
    assert after_parent_ended(gate.waiting, "C", "SUCCEEDED") == Gate(RUN)
    assert after_parent_ended(["B", "C"], "C", "DEAD_LETTERED").action is CANCEL
    assert after_parent_ended(["B", "C"], "C", "DEAD_LETTERED", "RUN") == Gate(WAIT, ("B",))


def test_the_end_of_a_parent_not_waited_for_changes_nothing() -> None:
    assert after_parent_ended(["B"], "A", "DEAD_LETTERED") == Gate(WAIT, ("B",))
    assert after_parent_ended([], "A", "SUCCEEDED") == Gate(RUN)
