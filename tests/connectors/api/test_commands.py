"""Contract tests of the job commands (trigger, PATCH) and POST /api/v1/workflows against
the real service and broker, with the real timers where a command must take effect."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobstream._pipeline.clock import instant_of, now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.status.processor import STATUS_OPTIONS, status_runner
from jobstream._pipeline.timers.processor import TIMER_OPTIONS, timer_runner
from jobstream._pipeline.topics import Topics
from tests.support.api import read_intake, submit, visible
from tests.support.pipeline import Executions, in_thread
from tests.support.reader import events_of
from tests.support.waiting import wait_for

HOUR_MS = 3_600_000


def test_trigger_runs_a_scheduled_job_now_through_the_timers(
    acme: httpx.Client, bolt: httpx.Client, settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    options = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
    runs = Executions(settings)
    try:
        with in_thread(timer_runner(settings, options)):
            later = submit(acme, run_at="2030-01-01T00:00Z").json()["job_id"]
            wait_for(lambda: visible(acme, later), what="job in the views")
            assert bolt.post(f"/api/v1/jobs/{later}/trigger").status_code == 404
            reply = acme.post(f"/api/v1/jobs/{later}/trigger")
            assert reply.status_code == 202, reply.text
            assert reply.json() == {"job_id": later, "command": "trigger"}
            wait_for(lambda: runs.poll() >= 1, what="the triggered execution")
            (run,) = runs.records.values()
            assert run["job_id"] == later and run["scheduled_at_ms"] < 1_893_456_000_000
    finally:
        runs.close()


def test_trigger_refuses_what_cannot_run_now(acme: httpx.Client) -> None:
    assert acme.post("/api/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/trigger").status_code == 404
    nightly = submit(acme, cron="0 2 * * *").json()["job_id"]
    wait_for(lambda: visible(acme, nightly), what="schedule in the views")
    assert acme.post(f"/api/v1/jobs/{nightly}/trigger").status_code == 202


def nightly_and_once(client: httpx.Client) -> tuple[str, str]:
    """A recurring job and a one-off job far ahead, both in the views."""
    nightly = submit(client, cron="0 2 * * *").json()["job_id"]
    once = submit(client, run_at="2030-01-01T00:00Z").json()["job_id"]
    wait_for(lambda: visible(client, nightly) and visible(client, once), what="jobs in the views")
    return nightly, once


def test_patch_changes_a_schedule_and_names_the_field_at_fault(
    acme: httpx.Client, bolt: httpx.Client, settings: Settings, topics: Topics
) -> None:
    nightly, once = nightly_and_once(acme)
    reply = acme.patch(f"/api/v1/jobs/{nightly}",
                       json={"cron": {"expression": "30 3 * * *", "timezone": "Europe/Paris"},
                             "params": {"region": "eu"}})  # fmt: skip
    assert reply.status_code == 202, reply.text
    assert reply.json() == {"job_id": nightly, "command": "update"}
    cases = [
        ({"cron": {"expression": "30 3 * * *", "timezone": "Mars/Base"}}, "cron.timezone"),
        ({"cron": "61 * * * *"}, "cron.expression"),
        ({"params": [1]}, "params"),
        ({"nonsense": 1}, "nonsense"),
        ({}, "cron"),
    ]
    for body, field in cases:
        bad = acme.patch(f"/api/v1/jobs/{nightly}", json=body)
        assert bad.status_code == 422, (body, bad.text)
        assert bad.json()["field"] == field, (body, bad.json())
    assert bolt.patch(f"/api/v1/jobs/{nightly}", json={"cron": "0 4 * * *"}).status_code == 404
    one_off = acme.patch(f"/api/v1/jobs/{once}", json={"cron": "0 4 * * *"})
    assert one_off.status_code == 409 and one_off.json()["field"] == "job_id"
    intake = read_intake(settings, topics, 3)
    update = intake[-1]
    assert (update.name, update.data["job_id"], update.data["action"]) == (
        "ScheduleChanged", nightly, "UPDATE")  # fmt: skip
    assert update.data["cron"]["timezone"] == "Europe/Paris"
    assert update.data["params"] == '{"region":"eu"}'


def test_a_workflow_is_submitted_whole_or_not_at_all(
    acme: httpx.Client,
    bolt: httpx.Client,
    admin: httpx.Client,
    settings: Settings,
    topics: Topics,
) -> None:
    steps = [
        {"name": "extract", "job_type": "data.process", "params": {"n": 1}},
        {"name": "report", "job_type": "report.generate", "depends_on": ["extract"]},
    ]
    reply = acme.post("/api/v1/workflows", json={"steps": steps},
                      headers={"Idempotency-Key": "wf-1"})  # fmt: skip
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert set(body["job_ids"]) == {"extract", "report"} and body["created"]
    report = body["job_ids"]["report"]
    shown = acme.get(f"/api/v1/jobs/{report}")  # before the views could have read it
    assert shown.status_code == 200 and shown.json()["workflow_id"] == body["workflow_id"]
    assert bolt.get(f"/api/v1/jobs/{report}").status_code == 404
    (event,) = read_intake(settings, topics, 1)
    assert event.name == "WorkflowSubmitted" and event.data["owner"] == "acme"
    wait_for(lambda: visible(acme, report), what="the workflow's jobs in the views")
    again = acme.post("/api/v1/workflows", json={"steps": steps},
                      headers={"Idempotency-Key": "wf-1"})  # fmt: skip
    assert again.status_code == 200 and again.json() == {**body, "created": False}
    cases = [
        ({"steps": [steps[0], {**steps[1], "job_type": "Bad Type"}]}, "steps.1.spec.job_type"),
        ({"steps": [{**steps[0], "depends_on": ["report"]}, steps[1]]}, "steps"),
        ({"steps": steps, "owner": "bolt"}, "owner"),
        ({"steps": steps, "color": "red"}, "color"),
    ]
    for payload, field in cases:
        bad = acme.post("/api/v1/workflows", json=payload)
        assert bad.status_code == 422, (payload, bad.text)
        assert bad.json()["field"] == field, (payload, bad.json())
    assert admin.post("/api/v1/workflows", json={"steps": steps}).json()["field"] == "owner"
    assert admin.post("/api/v1/workflows",
                      json={"steps": steps, "owner": "bolt"}).status_code == 201  # fmt: skip


def iso(ms: int) -> str:
    return instant_of(ms).isoformat()


def shown(c: httpx.Client, job_id: str) -> dict[str, Any]:
    return c.get(f"/api/v1/jobs/{job_id}").json()


def runs_of(runs: Executions, job_id: str) -> list[dict[str, Any]]:
    runs.poll()
    return [run for run in runs.records.values() if run["job_id"] == job_id]


def test_patch_moves_a_one_off_job_later_or_earlier_through_the_timers(
    acme: httpx.Client, settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    runs = Executions(settings)
    try:
        with ExitStack() as running:
            timers = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
            status = STATUS_OPTIONS.evolve(instance_id="s", state_dir=tmp_path / "status")
            running.enter_context(in_thread(timer_runner(settings, timers)))
            running.enter_context(in_thread(status_runner(settings, status)))
            old = now_ms() + 15_000
            later = submit(acme, run_at=iso(old)).json()["job_id"]
            early = submit(acme, run_at=iso(old + HOUR_MS)).json()["job_id"]
            wait_for(lambda: shown(acme, later).get("scheduled_at_ms") == old
                     and shown(acme, early).get("state") == "SCHEDULED",
                     what="both jobs SCHEDULED in jobs.status")  # fmt: skip
            if now_ms() > old - 3000:
                pytest.fail("the timers took over 12 s to schedule a job: a move would race it")
            moves = {later: old + 5000, early: now_ms() + 2000}
            for job_id, at in moves.items():
                reply = acme.patch(f"/api/v1/jobs/{job_id}", json={"run_at_ms": at})
                assert reply.status_code == 202, reply.text
                assert reply.json() == {"job_id": job_id, "command": "update"}
            wait_for(lambda: shown(acme, later).get("scheduled_at_ms") == moves[later],
                     what="the new due time in jobs.status")  # fmt: skip

            # moved earlier: it runs at its new time, an hour early
            (run,) = wait_for(lambda: runs_of(runs, early), what="the job moved earlier runs")
            assert run["scheduled_at_ms"] == moves[early]
            lead = settings.fire_lead  # fired up to the lead ahead of its time, no sooner
            assert moves[early] - lead <= run["fired_at_ms"] < old + HOUR_MS

            # moved later: it runs at the new time, and nothing ran at the old one (a firing
            # then would sit before this one on the job's partition, read in order)
            (run,) = wait_for(lambda: runs_of(runs, later), timeout_s=60,
                              what="the job moved later runs")  # fmt: skip
            assert run["scheduled_at_ms"] == moves[later] <= run["fired_at_ms"] + lead
            assert len(runs_of(runs, later)) == 1

            # fired: it moves no more, and the 409 says why
            wait_for(lambda: shown(acme, later)["state"] != "SCHEDULED", what="the job fired")
            again = acme.patch(f"/api/v1/jobs/{later}", json={"run_at_ms": now_ms() + HOUR_MS})
            assert again.status_code == 409, again.text
            assert "fired already" in again.json()["detail"]
            assert again.json()["field"] == "job_id"
    finally:
        runs.close()


def test_patch_refuses_a_bad_run_time_naming_the_field(
    acme: httpx.Client, bolt: httpx.Client, settings: Settings, topics: Topics
) -> None:
    nightly, once = nightly_and_once(acme)
    soon = now_ms() + HOUR_MS
    cases = [
        ({"run_at_ms": now_ms() - 120_000}, "run_at_ms"),  # past, beyond the 60 s grace
        ({"run_at_ms": now_ms() + 11 * 366 * 24 * HOUR_MS}, "run_at_ms"),
        ({"run_at_ms": soon, "cron": "0 4 * * *"}, "run_at_ms"),
        ({"run_at_ms": "tomorrow"}, "run_at_ms"),
        ({"run_at_ms": True}, "run_at_ms"),
        ({"run_at_ms": soon, "params": [1]}, "params"),
    ]
    for body, field in cases:
        bad = acme.patch(f"/api/v1/jobs/{once}", json=body)
        assert bad.status_code == 422, (body, bad.text)
        assert bad.json()["field"] == field, (body, bad.json())
    assert bolt.patch(f"/api/v1/jobs/{once}", json={"run_at_ms": soon}).status_code == 404
    recurring = acme.patch(f"/api/v1/jobs/{nightly}", json={"run_at_ms": soon})
    assert recurring.status_code == 409 and "recurring" in recurring.json()["detail"]
    moved = acme.patch(f"/api/v1/jobs/{once}", json={"run_at_ms": soon, "params": {"v": 2}})
    assert moved.status_code == 202, moved.text
    intake = read_intake(settings, topics, 3)
    assert (intake[-1].name, intake[-1].data["job_id"]) == ("ScheduleChanged", once)
    assert (intake[-1].data["action"], intake[-1].data["run_at_ms"]) == ("UPDATE", soon)
    assert (intake[-1].data["cron"], intake[-1].data["params"]) == (None, '{"v":2}')


def test_every_command_records_who_asked_and_why_in_the_jobs_history(
    acme: httpx.Client, admin: httpx.Client, settings: Settings, topics: Topics, tmp_path: Path
) -> None:
    with ExitStack() as running:
        timers = TIMER_OPTIONS.evolve(instance_id="t", state_dir=tmp_path / "timers")
        status = STATUS_OPTIONS.evolve(instance_id="s", state_dir=tmp_path / "status")
        running.enter_context(in_thread(timer_runner(settings, timers)))
        running.enter_context(in_thread(status_runner(settings, status)))
        nightly = submit(acme, cron="0 2 * * *").json()["job_id"]
        once = submit(acme, run_at="2030-01-01T00:00Z").json()["job_id"]

        def reached(job_id: str, state: str) -> None:
            wait_for(lambda: shown(acme, job_id).get("state") == state, what=f"{state}")

        def sent(reply: httpx.Response) -> None:
            assert reply.status_code == 202, reply.text

        reached(nightly, "SCHEDULED")
        sent(acme.post(f"/api/v1/jobs/{nightly}/pause", json={"reason": "maintenance"}))
        reached(nightly, "PAUSED")
        sent(admin.patch(f"/api/v1/jobs/{nightly}", json={"cron": "0 3 * * *",
                                                           "reason": "after the backup"}))
        sent(acme.post(f"/api/v1/jobs/{nightly}/resume"))
        reached(nightly, "SCHEDULED")
        sent(admin.post(f"/api/v1/jobs/{nightly}/trigger", json={"reason": "catch up"}))
        sent(acme.post(f"/api/v1/jobs/{nightly}/cancel", json={"reason": "retired"}))
        reached(once, "SCHEDULED")
        sent(acme.post(f"/api/v1/jobs/{once}/trigger"))

        def asked(job_id: str, count: int) -> list[tuple[str, str, str]] | None:
            found = [(e["kind"], e["requested_by"], e["detail"])
                     for e in events_of(settings, job_id) if e.get("requested_by")]  # fmt: skip
            return found if len(found) >= count else None

        assert wait_for(lambda: asked(nightly, 5), what="the five commands' events") == [
            ("PAUSED", "api:acme", "maintenance"),
            ("PAUSED", "api:admin:ops-root", "after the backup"),
            ("RESUMED", "api:acme", "resumed"),
            ("FIRED", "api:admin:ops-root", "catch up"),
            ("CANCELLED", "api:acme", "retired"),
        ]
        assert wait_for(lambda: asked(once, 1), what="the trigger's event") == [
            ("SCHEDULED", "api:acme", "run now")]
    too_long = acme.post(f"/api/v1/jobs/{once}/pause", json={"reason": "x" * 1001})
    assert too_long.status_code == 422 and too_long.json()["field"] == "reason"
