"""Which runs are suspects, and how a suspect gets the process to itself."""

from __future__ import annotations

from pipeline.worker.quarantine import Quarantine, is_suspect


def _after(error_type: str | None) -> dict:
    errors = [] if error_type is None else [{"error_type": "Boom"}, {"error_type": error_type}]
    return {"execution_id": "e", "errors": errors}


def test_a_run_is_a_suspect_when_its_last_attempt_lost_its_process() -> None:
    assert is_suspect(_after("LeaseExpired"))
    assert is_suspect(_after("WorkerCrashed"))
    assert not is_suspect(_after(None)), "a first attempt"
    assert not is_suspect(_after("ValueError")), "a handler that raised"
    assert not is_suspect(_after("WorkerStopped")), "a worker stopped on purpose"
    assert not is_suspect({"execution_id": "e"})
    crashed_then_raised = {"errors": [{"error_type": "LeaseExpired"}, {"error_type": "Boom"}]}
    assert not is_suspect(crashed_then_raised), "only the last attempt counts"


def test_a_held_suspect_waits_for_the_others_and_then_runs_alone() -> None:
    quarantine: Quarantine[str] = Quarantine()
    running = {"e1": "a", "e2": "b"}
    assert not quarantine.blocks(running)
    quarantine.hold("suspect")
    assert quarantine.blocks(running), "nothing starts while it waits for the others"
    assert quarantine.take_held(running) is None
    del running["e1"]
    assert quarantine.take_held(running) is None, "one run is still beside it"
    del running["e2"]
    assert not quarantine.blocks(running)
    assert quarantine.take_held(running) == "suspect"
    quarantine.alone = "e3"
    running["e3"] = "suspect"
    assert quarantine.blocks(running), "nothing starts beside the suspect"
    del running["e3"]
    assert not quarantine.blocks(running) and quarantine.alone is None
