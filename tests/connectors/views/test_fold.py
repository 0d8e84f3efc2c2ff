"""The fold as pure functions (no store, no broker): every jobs.status field reaches a
job's document; the commands people give a job, in any order of the events, a replay,
and the bound, leave the same list."""

from __future__ import annotations

import random
from typing import Any

from jobstream._connectors.views.fold import (
    COMMANDS_KEPT,
    KEPT_BESIDE,
    apply_command,
    apply_event,
    apply_status,
    apply_submitted,
    command_of,
    new_doc,
)
from jobstream._pipeline.model.records import plain
from jobstream._pipeline.serde import Cancellation, JobStatus, LastError, Progress
from tests.connectors.views.records import event, status, submitted

T0 = 1_767_225_600_000  # 2026-01-01
JOB = submitted("acme", at_ms=T0)


def command(kind: str, at_ms: int, by: str | None = "api:acme", detail: str | None = None,
            **fields: Any) -> dict[str, Any]:  # fmt: skip
    return event(JOB, kind, at_ms=at_ms, requested_by=by, detail=detail, **fields)


def fold_all(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    held: list[dict[str, Any]] = []
    for one in events:
        changed = apply_command(held, one)
        if changed is not None:
            held = changed
    return held


def history() -> list[dict[str, Any]]:
    """Commands of every kind a person causes, and the events around them no one asked for."""
    return [
        event(JOB, "FIRED", at_ms=T0 + 1),  # the schedule's own firing
        command("PAUSED", T0 + 10, detail="paused"),
        command("RESUMED", T0 + 20, by="api:admin:ops-alice", detail="resumed"),
        command("SCHEDULED", T0 + 30, detail="schedule updated"),
        command("FIRED", T0 + 40, by="cli:alice", detail="run now"),
        event(JOB, "STARTED", at_ms=T0 + 41, worker_id="w-1"),
        event(JOB, "FAILED", at_ms=T0 + 42, worker_id="w-1"),
        command("RETRY_SCHEDULED", T0 + 50, by="api:admin", detail="redriven"),
        # two commands of one instant, both kept, in a fixed order
        command("CANCELLED", T0 + 60, detail="wrong input"),
        command("CANCELLED", T0 + 60, by="api:bolt", detail=None),
        event(JOB, "CANCELLED", at_ms=T0 + 61, requested_by=None, detail="parent failed"),
    ]


def test_only_events_a_person_asked_for_are_commands() -> None:
    assert command_of(event(JOB, "PAUSED", at_ms=T0)) is None
    assert apply_command([], event(JOB, "FIRED", at_ms=T0, requested_by=None)) is None
    expected = {"kind": "PAUSED", "at_ms": T0 + 5, "by": "api:acme", "reason": "a migration"}
    assert command_of(command("PAUSED", T0 + 5, detail="a migration")) == expected
    found = fold_all(history())
    assert [(c["kind"], c["by"]) for c in found] == [
        ("PAUSED", "api:acme"), ("RESUMED", "api:admin:ops-alice"), ("SCHEDULED", "api:acme"),
        ("FIRED", "cli:alice"), ("RETRY_SCHEDULED", "api:admin"), ("CANCELLED", "api:acme"),
        ("CANCELLED", "api:bolt")]  # fmt: skip
    assert [c["reason"] for c in found][-3:] == ["redriven", "wrong input", None]


def test_any_order_folds_into_the_same_commands() -> None:
    events = history()
    expected = fold_all(events)
    shuffler = random.Random(26)
    for _ in range(50):
        shuffled = events[:]
        shuffler.shuffle(shuffled)
        assert fold_all(shuffled) == expected
    assert [c["at_ms"] for c in expected] == sorted(c["at_ms"] for c in expected)


def test_an_event_read_again_is_kept_once() -> None:
    events = history()
    once = fold_all(events)
    assert fold_all(events + events) == once
    assert fold_all([e for pair in zip(events, events, strict=True) for e in pair]) == once
    assert apply_command(once, events[1]) is None  # nothing to write


def test_the_latest_commands_are_kept_whatever_the_order() -> None:
    events = [command("SCHEDULED", T0 + i, detail=f"move {i}") for i in range(COMMANDS_KEPT + 30)]
    forward = fold_all(events)
    assert len(forward) == COMMANDS_KEPT
    assert [c["at_ms"] for c in forward] == [T0 + i for i in range(30, COMMANDS_KEPT + 30)]
    shuffled = events[:]
    random.Random(5).shuffle(shuffled)
    assert fold_all(shuffled) == forward
    assert fold_all(list(reversed(events)) + events) == forward
    # one older than every command held changes nothing; a newer one pushes the oldest out
    assert apply_command(forward, command("PAUSED", T0)) is None
    newer = apply_command(forward, command("PAUSED", T0 + 10_000))
    assert newer is not None and len(newer) == COMMANDS_KEPT
    assert (newer[0]["at_ms"], newer[-1]["kind"]) == (T0 + 31, "PAUSED")


def test_a_submission_keeps_its_retry_policy_and_timeout_for_a_backfill() -> None:
    record = submitted("acme", at_ms=T0, retry={"max_attempts": 5}, timeout_ms=60_000)
    doc = apply_submitted(None, record)
    assert record.spec.retry is not None
    assert doc["retry"] == plain(record.spec.retry) and doc["retry"]["max_attempts"] == 5
    assert doc["timeout_ms"] == 60_000
    bare = apply_submitted(None, submitted("acme", at_ms=T0))
    assert (bare["retry"], bare["timeout_ms"]) == (None, None)


def test_every_jobs_status_field_reaches_the_document() -> None:
    """A status sets each field of JobStatus the document holds (the submission's only in a
    document no submission filled): waiting_for and throttled_ms too."""
    record = submitted("acme", at_ms=T0)
    blocked = status(record, "BLOCKED", at_ms=T0 + 5, waiting_for=["01JPARENT"],
                     throttled_ms=1_500)  # fmt: skip
    doc = apply_status(apply_submitted(None, record), blocked)
    assert (doc["waiting_for"], doc["throttled_ms"]) == (["01JPARENT"], 1_500)
    queued = apply_status(doc, status(record, "QUEUED", at_ms=T0 + 9))
    assert (queued["waiting_for"], queued["throttled_ms"]) == ([], None)
    fresh = new_doc(record["job_id"], "acme", "data.process", T0)
    missing = set(JobStatus.model_fields) - KEPT_BESIDE - set(fresh)
    assert not missing, f"the view's document lacks the jobs.status fields {sorted(missing)}"
    alone = apply_status(None, FULL_STATUS)
    values = FULL_STATUS.model_dump(mode="json")
    differ = {name for name in set(JobStatus.model_fields) - KEPT_BESIDE
              if alone[name] != values[name]}  # fmt: skip
    assert not differ, f"fields of a status not copied to the document: {sorted(differ)}"


FULL_STATUS = JobStatus(
    job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2T", workflow_id="wf.1", job_type="data.process",
    owner="acme", state="CANCELLED", attempt=2, epoch=T0, priority="HIGH",
    scheduled_at_ms=T0 + 1, next_fire_at_ms=T0 + 60_000, updated_at_ms=T0 + 2,
    last_error=LastError(error_type="E", message="m"), result='{"ok": 1}', result_uri="s3://r",
    runs=3, duplicates=1, step="load", waiting_for=["01JD3W6Q8Z5X7M2K4N9P0R1S2V"],
    created_at_ms=T0, labels={"team": "red"}, params='{"n": 1}', params_bytes=8,
    params_sha256="ab" * 32, throttled_ms=250, params_uri="/api/v1/jobs/x/params",
    cancellation=Cancellation(by="api:acme", reason="no", at_ms=T0 + 2),
    progress=Progress(fraction=0.5, message="half", at_ms=T0 + 1), pool="gpu",
    deadline_ms=T0 + 3_600_000, queue_limit_ms=30_000,
    keys={"concurrency": {"key": "customer-42", "limit": 2}}, held_by="concurrency:customer-42",
    joined_job_id="01JD3W6Q8Z5X7M2K4N9P0R1S2W", submitted_by="api:admin:ops",
)  # fmt: skip
"""A status with every field set: a field added to JobStatus and left out here fails
:func:`test_a_full_status_sets_every_field`."""


def test_a_full_status_sets_every_field() -> None:
    unset = set(JobStatus.model_fields) - FULL_STATUS.model_fields_set
    assert not unset, f"FULL_STATUS leaves out {sorted(unset)}: set them"


def test_a_runs_start_is_its_handlers_launch_once_its_worker_tells_it() -> None:
    """STARTED of a run claimed ahead says its due instant; its HEARTBEAT says its handler
    began 120 ms later, and so does its end: the run's ``started_at_ms`` is the launch
    from then on. A run whose events tell no launch keeps its STARTED's instant."""
    due = T0 + 1000
    run = None
    seen = []
    for one in (event(JOB, "FIRED", at_ms=due - 1000, due_ms=due),
                event(JOB, "STARTED", at_ms=due, due_ms=due, worker_id="w-1"),
                event(JOB, "HEARTBEAT", at_ms=due + 500, due_ms=due, launched_at_ms=due + 120),
                event(JOB, "SUCCEEDED", at_ms=due + 900, due_ms=due, launched_at_ms=due + 120)):
        run = apply_event(run, one)
        assert run is not None
        seen.append(run["started_at_ms"])
    assert seen == [None, due, due + 120, due + 120]
    assert run is not None and (run["outcome"], run["ended_at_ms"]) == ("SUCCEEDED", due + 900)
    untold = apply_event(apply_event(None, event(JOB, "STARTED", at_ms=due + 7, due_ms=due)),
                         event(JOB, "SUCCEEDED", at_ms=due + 9, due_ms=due))  # fmt: skip
    assert untold is not None and untold["started_at_ms"] == due + 7
