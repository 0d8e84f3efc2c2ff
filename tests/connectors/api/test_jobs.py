"""Contract tests of /api/v1/jobs against the real service and broker: every endpoint and
error code, pagination, owner isolation, admin access, 401."""

from __future__ import annotations

import logging

import httpx
import pytest

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.config import Settings
from jobstream._pipeline.kafka import clients
from jobstream._pipeline.serde import JobStatus, encode_status
from jobstream._pipeline.topics import Topics
from tests.support.api import read_intake, submit, visible
from tests.support.waiting import wait_for


def test_a_submission_is_201_with_location_and_shown_at_once(acme: httpx.Client) -> None:
    reply = submit(acme, params={"input": "sales.csv"}, labels={"team": "red"})
    assert reply.status_code == 201, reply.text
    job_id = reply.json()["job_id"]
    assert reply.headers["location"] == f"/api/v1/jobs/{job_id}"
    shown = acme.get(reply.headers["location"])  # before the views could have read it
    assert shown.status_code == 200 and shown.json()["state"] in ("SUBMITTED", "SCHEDULED")
    assert shown.json()["owner"] == "acme"
    wait_for(lambda: visible(acme, job_id, label="team=red"), what="job in the views")
    doc = acme.get(f"/api/v1/jobs/{job_id}").json()
    assert doc["params"] == {"input": "sales.csv"} and doc["labels"] == {"team": "red"}


def test_a_jobs_keys_are_filled_from_it_and_shown_and_a_bad_one_is_422(acme: httpx.Client) -> None:
    keys = {"concurrency": {"key": "customer-{params.customer}", "limit": 2},
            "rate": {"key": "crm", "rate": "100/min"}}  # fmt: skip
    reply = submit(acme, params={"customer": 42}, keys=keys)
    assert reply.status_code == 201, reply.text
    shown = acme.get(reply.headers["location"]).json()
    assert shown["keys"] == {"concurrency": {"key": "customer-42", "limit": 2},
                             "rate": {"key": "crm", "rate": "100/min"}}, shown  # fmt: skip
    for body, field in (({"keys": {"concurrency": {"key": "c-{params.nope}"}}}, "spec.job_keys"),
                        ({"keys": {"rate": {"key": "crm", "rate": "fast"}}},
                         "spec.job_keys.rate.rate"),
                        ({"keys": {"singleton": {"key": "s"}}, "workflow_id": "wf"},
                         "spec.job_keys.singleton_key"),
                        ({"keys": {"lock": {"key": "s"}}}, "spec.job_keys.lock")):  # fmt: skip
        refused = submit(acme, **body)
        assert (refused.status_code, refused.json()["field"]) == (422, field), refused.text
    assert "params.nope" in submit(acme, keys=keys | {"concurrency": {"key": "{params.nope}"}}
                                   ).json()["detail"]


def test_bad_fields_are_422_naming_the_field(acme: httpx.Client) -> None:
    cases = [
        ({"job_type": "Bad Type"}, "spec.job_type"),
        ({"cron": {"expression": "0 9 * * *", "timezone": "Mars/Base"}}, "spec.cron.timezone"),
        ({"params": [1, 2]}, "spec.params"),
        ({"priority": "urgent"}, "spec.priority"),
        ({"nonsense": 1}, "nonsense"),
        ({"run_at": "2001-01-01T00:00Z"}, "spec.run_at_ms"),
        ({"retry": {"max_attempts": 0}}, "spec.retry.max_attempts"),
    ]
    for body, field in cases:
        reply = acme.post("/api/v1/jobs", json={"job_type": "data.process", **body})
        assert reply.status_code == 422, (body, reply.text)
        assert reply.json()["field"] == field, (body, reply.json())
    not_json = acme.post("/api/v1/jobs", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 422


def test_the_small_refusals_name_their_field(acme: httpx.Client) -> None:
    as_json = {"content-type": "application/json"}
    for number in ("NaN", "Infinity", "-Infinity"):
        body = f'{{"job_type": "data.process", "params": {{"x": [1, {number}]}}}}'
        reply = acme.post("/api/v1/jobs", content=body.encode(), headers=as_json)
        assert (reply.status_code, reply.json()["field"]) == (422, "spec.params"), reply.text
    malformed = acme.post("/api/v1/jobs", content=b'{"job_type": }', headers=as_json)
    assert (malformed.status_code, malformed.json()["field"]) == (422, "body"), malformed.text
    assert "character 13" in malformed.json()["detail"]
    cases = [
        ({"labels": {"a=b": "c"}}, "spec.labels"),
        ({"labels": {f"l{i}": "v" for i in range(33)}}, "spec.labels"),
        ({"labels": {"team": "v" * 501}}, "spec.labels"),
        ({"workflow_id": "a/b"}, "workflow_id"),
        ({"workflow_id": "wf\x00"}, "workflow_id"),
        ({"workflow_id": "wf\n1"}, "workflow_id"),
    ]
    for body, field in cases:
        reply = submit(acme, **body)
        assert (reply.status_code, reply.json()["field"]) == (422, field), (body, reply.text)
    steps = [{"name": "a", "job_type": "data.process"}]
    reply = acme.post("/api/v1/workflows", json={"steps": steps, "workflow_id": "x/y"})
    assert (reply.status_code, reply.json()["field"]) == (422, "workflow_id"), reply.text
    kept = submit(acme, workflow_id="payroll-2026", labels={"team": "a=b"})
    assert kept.status_code == 201, kept.text
    wait_for(lambda: visible(acme, kept.json()["job_id"], label="team=a=b"),
             what="the job found by a label whose value holds '='")  # fmt: skip
    assert acme.get("/api/v1/workflows/payroll-2026").status_code == 200


def test_a_body_over_the_limit_is_413(acme: httpx.Client, server: ApiServer) -> None:
    limit = server.api.api_max_body_bytes
    reply = submit(acme, params={"blob": "x" * (limit + 10)})
    assert reply.status_code == 413 and reply.json()["field"] == "body"
    # params just over 1 MB fit the body limit but break the params rule
    reply = submit(acme, params={"blob": "x" * 1_000_001})
    assert reply.status_code == 422 and reply.json()["field"] == "spec.params"


def test_the_idempotency_key_header_makes_one_job(acme: httpx.Client) -> None:
    headers = {"Idempotency-Key": "import-2026-11-22"}
    first = acme.post("/api/v1/jobs", json={"job_type": "data.process"}, headers=headers)
    again = acme.post("/api/v1/jobs", json={"job_type": "data.process"}, headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["job_id"] == again.json()["job_id"] and not again.json()["created"]
    clash = acme.post("/api/v1/jobs", headers=headers,
                      json={"job_type": "data.process", "idempotency_key": "other"})  # fmt: skip
    assert clash.status_code == 422 and clash.json()["field"] == "idempotency_key"


def test_a_batch_is_all_or_nothing(acme: httpx.Client) -> None:
    jobs = [{"job_type": "data.process", "labels": {"batch": "b1"}} for _ in range(20)]
    broken = {"job_type": "x", "timeout_ms": 0}
    bad = acme.post("/api/v1/jobs/batch", json={"jobs": [*jobs, broken]})
    assert bad.status_code == 422 and bad.json()["field"] == "jobs[20].spec.timeout_ms"
    good = acme.post("/api/v1/jobs/batch", json={"jobs": jobs})
    assert good.status_code == 201, good.text
    ids = good.json()["job_ids"]
    assert len(set(ids)) == 20
    wait_for(lambda: len(acme.get("/api/v1/jobs", params={"label": "batch=b1"}).json()["items"])
             == 20, what="batch in the views")  # fmt: skip


def test_pages_follow_the_cursor(acme: httpx.Client) -> None:
    jobs = [{"job_type": "image.render", "labels": {"page": "p"}} for _ in range(25)]
    ids = acme.post("/api/v1/jobs/batch", json={"jobs": jobs}).json()["job_ids"]
    filters = {"type": "image.render", "label": "page=p"}
    wait_for(lambda: len(acme.get("/api/v1/jobs", params=filters).json()["items"]) == 25,
             what="jobs in the views")  # fmt: skip
    seen: list[str] = []
    cursor = None
    while True:
        params = {**filters, "limit": "10", **({"cursor": cursor} if cursor else {})}
        page = acme.get("/api/v1/jobs", params=params).json()
        assert len(page["items"]) <= 10
        seen += [item["job_id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 25
    assert seen == sorted(seen, reverse=True)  # newest first: ULIDs sort by creation
    garbled = acme.get("/api/v1/jobs", params={"cursor": "%%%"})
    assert garbled.status_code == 422 and garbled.json()["field"] == "cursor"
    for params, field in (({"state": "NAPPING"}, "state"), ({"label": "x"}, "label"),
                          ({"limit": "0"}, "limit")):  # fmt: skip
        reply = acme.get("/api/v1/jobs", params=params)
        assert reply.status_code == 422 and reply.json()["field"] == field


def test_owners_are_isolated_and_an_admin_sees_all(
    acme: httpx.Client, bolt: httpx.Client, admin: httpx.Client
) -> None:
    job_id = submit(acme, labels={"iso": "1"}).json()["job_id"]
    wait_for(lambda: visible(acme, job_id), what="job in the views")
    # another owner's job does not exist for bolt: 404, not 403
    assert bolt.get(f"/api/v1/jobs/{job_id}").status_code == 404
    assert bolt.get(f"/api/v1/jobs/{job_id}/executions").status_code == 404
    assert bolt.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 404
    assert not visible(bolt, job_id) and not visible(bolt, job_id, owner="acme")
    assert not visible(bolt, job_id, label="iso=1")
    # nor can bolt submit in acme's name
    forged = submit(bolt, owner="acme")
    assert forged.status_code == 422 and forged.json()["field"] == "spec.owner"
    # the admin sees it, lists it, and must name an owner to submit
    assert admin.get(f"/api/v1/jobs/{job_id}").json()["owner"] == "acme"
    assert visible(admin, job_id) and visible(admin, job_id, owner="acme")
    assert submit(admin).json()["field"] == "spec.owner"
    assert submit(admin, owner="carp").status_code == 201


def test_no_or_a_wrong_token_is_401(anonymous: httpx.Client, server: ApiServer) -> None:
    for method, path in (("GET", "/api/v1/jobs"), ("POST", "/api/v1/jobs"),
                         ("GET", "/api/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV"),
                         ("GET", "/api/v1/workers"), ("GET", "/api/v1/dlq")):  # fmt: skip
        reply = anonymous.request(method, path, json={"job_type": "data.process"})
        assert reply.status_code == 401, (method, path)
        assert reply.headers["www-authenticate"] == "Bearer"
    wrong = anonymous.get("/api/v1/jobs", headers={"Authorization": "Bearer acme-secreT"})
    assert wrong.status_code == 401
    assert anonymous.get("/healthz").status_code == 200
    assert anonymous.get("/openapi.json").json()["paths"]["/api/v1/jobs"]
    assert anonymous.get("/docs").status_code == 200


def test_commands_reach_the_intake_and_ended_jobs_refuse_them(
    acme: httpx.Client, settings: Settings, topics: Topics
) -> None:
    unknown = acme.post("/api/v1/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel")
    assert unknown.status_code == 404
    once = submit(acme, run_at="2030-01-01T00:00Z").json()["job_id"]
    cancelled = acme.post(f"/api/v1/jobs/{once}/cancel", json={"reason": "not needed"})
    assert cancelled.status_code == 202 and cancelled.json() == {
        "job_id": once,
        "command": "cancel",
    }
    wait_for(lambda: visible(acme, once), what="job in the views")
    assert acme.post(f"/api/v1/jobs/{once}/pause").status_code == 409  # not recurring
    nightly = submit(acme, cron="0 2 * * *").json()["job_id"]
    wait_for(lambda: visible(acme, nightly), what="schedule in the views")
    assert acme.post(f"/api/v1/jobs/{nightly}/pause").status_code == 202
    assert acme.post(f"/api/v1/jobs/{nightly}/resume").status_code == 202
    intake = read_intake(settings, topics, 5)
    assert [(e.name, e.data["job_id"], e.data.get("action")) for e in intake] == [
        ("JobSubmitted", once, None), ("JobCancelled", once, None),
        ("JobSubmitted", nightly, None), ("ScheduleChanged", nightly, "PAUSE"),
        ("ScheduleChanged", nightly, "RESUME")]  # fmt: skip
    # a job that has ended takes no more commands
    done = JobStatus(job_id=once, job_type="data.process", owner="acme", state="CANCELLED",
                     updated_at_ms=now_ms())  # fmt: skip
    producer = clients.producer(settings)
    producer.produce(topics.status, encode_status(done), once.encode())
    assert producer.flush(30) == 0
    wait_for(lambda: acme.get(f"/api/v1/jobs/{once}").json()["state"] == "CANCELLED",
             what="status in the views")  # fmt: skip
    again = acme.post(f"/api/v1/jobs/{once}/cancel")
    assert again.status_code == 409 and again.json()["field"] == "job_id"


def test_a_job_that_fired_takes_a_cancel_naming_who_asked(
    acme: httpx.Client, admin: httpx.Client, settings: Settings, topics: Topics
) -> None:
    """QUEUED and RUNNING jobs are with the workers: the cancel goes to the timers all the
    same, which pass it on to the workers (docs/lifecycle.md, "Cancelling a run")."""
    once = submit(acme, run_at="2030-01-01T00:00Z").json()["job_id"]
    wait_for(lambda: visible(acme, once), what="job in the views")
    producer = clients.producer(settings)
    for state, client in (("QUEUED", acme), ("RUNNING", admin)):
        status = JobStatus(job_id=once, job_type="data.process", owner="acme", state=state,
                           updated_at_ms=now_ms())  # fmt: skip
        producer.produce(topics.status, encode_status(status), once.encode())
        assert producer.flush(30) == 0
        wait_for(lambda s=state: acme.get(f"/api/v1/jobs/{once}").json()["state"] == s,
                 what=f"{state} in the views")  # fmt: skip
        accepted = client.post(f"/api/v1/jobs/{once}/cancel", json={"reason": f"in {state}"})
        assert accepted.status_code == 202, accepted.text
    cancels = [e for e in read_intake(settings, topics, 3) if e.name == "JobCancelled"]
    assert [(e.data["requested_by"], e.data["reason"]) for e in cancels] == [
        ("api:acme", "in QUEUED"), ("api:admin:ops-root", "in RUNNING")]  # fmt: skip


def test_the_access_log_names_the_principal_of_each_request(
    acme: httpx.Client, anonymous: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="jobstream._connectors.api.app"):
        assert acme.get("/api/v1/jobs").status_code == 200
        assert anonymous.get("/api/v1/jobs").status_code == 401
    lines = [r for r in caplog.records if r.getMessage() == "request"]
    assert [(r.status, r.principal) for r in lines] == [(200, "api:acme"), (401, None)]
    assert lines[0].token and lines[1].token is None


def test_a_job_names_who_submitted_it_an_admin_for_an_owner_too(
    acme: httpx.Client, admin: httpx.Client
) -> None:
    own = submit(acme).json()["job_id"]
    for_acme = submit(admin, owner="acme").json()["job_id"]
    assert acme.get(f"/api/v1/jobs/{own}").json()["submitted_by"] == "api:acme"
    assert acme.get(f"/api/v1/jobs/{for_acme}").json()["submitted_by"] == "api:admin:ops-root"
    wait_for(lambda: visible(acme, for_acme), what="the admin's job in the views")
    assert acme.get(f"/api/v1/jobs/{for_acme}").json()["submitted_by"] == "api:admin:ops-root"
