"""GET /api/v1/jobs/{id}/events, GET /api/v1/schedules and the jobs list's time range,
against the real service and broker: contents, owner isolation, 404s and 422s by field."""

from __future__ import annotations

import httpx

from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import Event
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.commands import workflow_event
from jobstream._pipeline.workflows.ids import schedule_job_id
from tests.connectors.views.records import event
from tests.support.pipeline import SERIALIZE, produce
from tests.support.waiting import wait_for


def a_job(c: httpx.Client, **body: object) -> str:
    reply = c.post("/api/v1/jobs", json={"job_type": "data.process", **body})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["job_id"])


def test_a_jobs_events_are_its_timeline_with_lateness_and_heartbeats_counted(
    acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client, settings: Settings,
    topics: Topics,
) -> None:  # fmt: skip
    job_id = a_job(acme)
    at = now_ms()
    record = {"job_id": job_id, "submitted_at_ms": at,
              "spec": {"job_type": "data.process", "owner": "acme"}}  # fmt: skip

    def step(kind: str, dt: int, **fields: object) -> Event:
        return Event("JobLifecycle", event(record, kind, at_ms=at + dt, due_ms=at, **fields))

    produce(settings, topics.events, [
        step("FIRED", 12, scheduled_at_ms=at, lateness_ms=12),
        step("STARTED", 30, worker_id="w-1"),
        *(step("HEARTBEAT", 40 + i, worker_id="w-1") for i in range(5)),
        step("SUCCEEDED", 90, worker_id="w-1", result='{"n": 1}'),
    ])  # fmt: skip

    def timeline() -> list[dict[str, object]] | None:
        found = acme.get(f"/api/v1/jobs/{job_id}/events").json()["events"]
        return found if any(e["kind"] == "SUCCEEDED" for e in found) else None

    shown = wait_for(timeline, what="the timeline folded")
    assert [(e["kind"], e["lateness_ms"], e["worker_id"]) for e in shown] == [
        ("FIRED", 12, None), ("STARTED", 30, "w-1"), ("HEARTBEAT", None, "w-1"),
        ("SUCCEEDED", None, "w-1")]  # fmt: skip
    assert (shown[2]["count"], shown[2]["last_at_ms"]) == (5, at + 44)
    assert acme.get(f"/api/v1/jobs/{job_id}/events").json()["truncated"] is False
    assert admin.get(f"/api/v1/jobs/{job_id}/events").json()["events"] == shown
    other = bolt.get(f"/api/v1/jobs/{job_id}/events")
    assert (other.status_code, other.json()["field"]) == (404, "job_id")
    missing = acme.get("/api/v1/jobs/01KAAAAAAAAAAAAAAAAAAAAAAA/events")
    assert missing.status_code == 404


def test_schedules_list_an_owners_recurring_jobs_and_workflows_with_next_runs(
    acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client, settings: Settings,
    topics: Topics,
) -> None:  # fmt: skip
    cron = {"expression": "30 9 * * MON-FRI", "timezone": "America/New_York"}
    recurring = a_job(acme, cron=cron)
    a_job(acme)  # one-off: not a schedule
    theirs = a_job(bolt, cron="0 * * * *")
    template = workflow_event("acme", [{"name": "extract", "job_type": "data.process"}],
                              now_ms=now_ms(), schedule="0 3 * * *")  # fmt: skip
    producer = clients.producer(settings)
    producer.produce(topics.intake, SERIALIZE(template), template.data["workflow_id"].encode())
    assert producer.flush(30) == 0

    def listed() -> list[dict[str, object]] | None:
        items = acme.get("/api/v1/schedules").json()["items"]
        return items if len(items) == 2 else None

    items = wait_for(listed, what="the job and the workflow listed")
    workflow, job = items  # newest first
    assert (job["kind"], job["id"], job["expression"], job["timezone"]) == (
        "job", recurring, "30 9 * * MON-FRI", "America/New_York")
    assert job["pausable"] is True and job["paused"] is False and job["job_type"] == "data.process"
    assert len(job["next_runs_ms"]) == 5 and job["next_runs_ms"] == sorted(job["next_runs_ms"])
    assert job["next_runs_ms"][0] > now_ms() - 60_000
    assert (workflow["kind"], workflow["id"], workflow["steps"]) == (
        "workflow", template.data["workflow_id"], ["extract"])
    assert workflow["pausable"] is True and len(workflow["next_runs_ms"]) == 5
    assert workflow["status_id"] == schedule_job_id("acme", template.data["workflow_id"])
    assert theirs not in {i["id"] for i in acme.get("/api/v1/schedules").json()["items"]}
    assert acme.get("/api/v1/schedules", params={"owner": "bolt"}).json()["items"] == []
    everyone = admin.get("/api/v1/schedules", params={"limit": 2})
    assert everyone.status_code == 200 and everyone.json()["next_cursor"] is not None
    # a recurring workflow's cancel over the API ends its schedule: it leaves the listing
    cancel = acme.post(f"/api/v1/workflows/{template.data['workflow_id']}/cancel")
    assert cancel.status_code == 202, cancel.text
    wait_for(lambda: len(acme.get("/api/v1/schedules").json()["items"]) == 1,
             what="the cancelled workflow gone")  # fmt: skip


def test_bad_queries_are_422_naming_the_field(acme: httpx.Client) -> None:
    cases = [
        ("/api/v1/schedules", {"limit": 0}, "limit"),
        ("/api/v1/schedules", {"cursor": "%%%"}, "cursor"),
        ("/api/v1/jobs", {"since": "yesterday"}, "since"),
        ("/api/v1/jobs", {"until": "2026-03-01T00:00:00"}, "until"),  # no zone
        ("/api/v1/jobs", {"since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
         "until"),
    ]  # fmt: skip
    for path, params, field in cases:
        reply = acme.get(path, params=params)
        assert (reply.status_code, reply.json()["field"]) == (422, field), (params, reply.text)


def test_the_jobs_list_takes_a_creation_time_range(acme: httpx.Client) -> None:
    first = a_job(acme, labels={"batch": "range"})
    middle = now_ms()
    wait_for(lambda: now_ms() > middle + 2, what="a later millisecond")
    second = a_job(acme, labels={"batch": "range"})

    def ids(**params: object) -> list[str]:
        page = acme.get("/api/v1/jobs", params={"label": "batch=range", **params}).json()
        return [item["job_id"] for item in page["items"]]

    wait_for(lambda: ids() == [second, first], what="both jobs in the views")
    assert ids(since=str(middle)) == [second]
    assert ids(until=str(middle)) == [first]
    assert ids(since="2000-01-01T00:00:00+01:00", until=str(middle + 10**9)) == [second, first]
