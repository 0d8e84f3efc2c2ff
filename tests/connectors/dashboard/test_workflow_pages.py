"""Workflows that wait, through every door, on the real pipeline, API and broker, in one
stack: an approval given in Chromium from the Approvals page, one given through its
one-time link with no API token, one left alone until its timeout, a signal written by a
plain confluent-kafka producer (Avro single-object encoding, the .avsc from schemas/), a
sleep; each step after a wait runs on a worker only once the wait has ended. And the job
page draws a workflow's waits, sleeps and maps as it unfolds: a wait WAITING for its
signal, then SUCCEEDED once the signal comes over HTTP; a sleep until its instant; a map
of 30 items as one box whose count of items done grows with the live stream, never a box
per item."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from fastavro import parse_schema, schemaless_writer
from fastavro.schema import fingerprint, to_parsing_canonical_form
from playwright.sync_api import Page, expect

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.topics import Topics
from jobstream._pipeline.workflows.members import item_job_id
from tests.connectors.api.conftest import TOKENS
from tests.connectors.dashboard.conftest import log_in, shot
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]


RUN = uuid.uuid4().hex[:8]
"""In each workflow id: a broker given by KAFKA_BOOTSTRAP_SERVERS keeps earlier runs' jobs."""


def submit(admin: httpx.Client, workflow_id: str, *steps: dict[str, Any]) -> dict[str, str]:
    body = {"owner": "acme", "workflow_id": f"{workflow_id}-{RUN}", "steps": list(steps)}
    response = admin.post("/api/v1/workflows", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json()["job_ids"])


def job(admin: httpx.Client, job_id: str) -> dict[str, Any]:
    response = admin.get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def reaches(admin: httpx.Client, job_id: str, state: str, timeout_s: float = 60) -> dict[str, Any]:
    return wait_for(lambda: (doc := job(admin, job_id))["state"] == state and doc,
                    timeout_s=timeout_s, what=f"{job_id} {state}")  # fmt: skip


APPROVE = {"name": "approve", "wait": {"signal": "approved", "timeout": "2m", "approval": True,
                                       "prompt": "Publish the report?"}}  # fmt: skip
AFTER = {"name": "publish", "depends_on": ["approve"], "job_type": "data.process",
         "params": {"echo_parents": True}}  # fmt: skip


def test_an_approval_given_in_the_dashboard_runs_the_next_step(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    ids = submit(admin, "report-dash", APPROVE, AFTER)
    waiting = reaches(admin, ids["approve"], "WAITING")
    assert waiting["waiting_for"] == ["approved"]
    assert job(admin, ids["publish"])["state"] == "BLOCKED"

    log_in(page, TOKENS["acme"])
    page.goto("/#/approvals")
    row = page.locator(f"[data-approval='{ids['approve']}']")
    expect(row).to_contain_text("Publish the report?")
    shot(page, tmp_path, "approvals")
    row.locator("input[name=reason]").fill("numbers checked")
    row.locator(f"[data-approve='{ids['approve']}']").click()
    expect(page.locator("#approvals-message")).to_contain_text("approved")

    done = reaches(admin, ids["publish"], "SUCCEEDED")
    parents = json.loads(done["result"])["parents"]
    assert parents["approve"][0] == "SUCCEEDED"
    assert parents["approve"][1] == {"approved": True, "by": "api:acme",
                                     "reason": "numbers checked"}  # fmt: skip
    approved = job(admin, ids["approve"])
    assert approved["state"] == "SUCCEEDED"
    listed = [item["job_id"] for item in admin.get("/api/v1/approvals").json()["items"]]
    assert ids["approve"] not in listed, "it waits no more"


def test_a_one_time_link_completes_its_step_once_without_a_token(
    page: Page, admin: httpx.Client, api: ApiServer, tmp_path: Path
) -> None:
    ids = submit(admin, "report-link", APPROVE, AFTER)
    reaches(admin, ids["approve"], "WAITING")
    listed = wait_for(lambda: [item for item in admin.get("/api/v1/approvals").json()["items"]
                               if item["job_id"] == ids["approve"]], what="listed")  # fmt: skip
    link = listed[0]["link"]
    page.goto(link)  # no login: the link is its own token
    expect(page.locator("#prompt")).to_have_text("Publish the report?")
    page.fill("#reason", "not this week")
    page.click("#reject")
    expect(page.locator("#approval-status")).to_have_text("Rejected. Thank you.")
    shot(page, tmp_path, "link")

    rejected = reaches(admin, ids["approve"], "CANCELLED")
    assert rejected["cancellation"]["reason"] == "not this week"
    assert rejected["cancellation"]["by"] == f"link:{ids['approve']}"
    assert reaches(admin, ids["publish"], "CANCELLED")["cancellation"]["reason"].startswith(
        f"parent {ids['approve']} ended CANCELLED")
    token = link.split("#", 1)[1]
    with httpx.Client(base_url=api.url, timeout=30) as anyone:
        again = anyone.post("/api/v1/approvals/link", json={"token": token, "approve": True})
        assert again.status_code == 409, "a link completes its step once"
        forged = anyone.get("/api/v1/approvals/link",
                            headers={"X-Jobstream-Link": f"{ids['approve']}.{'A' * 32}"})
        assert forged.status_code == 404


def test_a_wait_left_alone_expires_at_its_timeout(admin: httpx.Client) -> None:
    ids = submit(admin, "report-alone",
                 {"name": "approve", "wait": {"signal": "approved", "timeout": "3s"}},
                 {**AFTER, "on_parent_failure": "CANCEL"})  # fmt: skip
    expired = reaches(admin, ids["approve"], "EXPIRED", timeout_s=60)
    assert expired["last_error"]["error_type"] == "WaitTimedOut"
    assert reaches(admin, ids["publish"], "CANCELLED")["state"] == "CANCELLED"


def test_a_signal_from_a_plain_kafka_producer_completes_a_wait(
    admin: httpx.Client, pipeline_topics: Topics
) -> None:
    ids = submit(admin, "report-kafka", {"name": "gate", "wait": {"signal": "file-landed"}},
                 {**AFTER, "depends_on": ["gate"]},
                 {"name": "pause", "depends_on": ["publish"], "sleep": {"for": "2s"}})  # fmt: skip
    reaches(admin, ids["gate"], "WAITING")
    # What any client does with the .avsc: Avro single-object encoding, keyed by workflow.
    schema = json.loads((ROOT / "schemas" / "io.jobstream.WorkflowSignalled.avsc").read_text())
    parsed = parse_schema(schema)
    crc = fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")  # little-endian, hex
    header = b"\xc3\x01" + bytes.fromhex(crc)
    body = io.BytesIO()
    schemaless_writer(body, parsed, {
        "workflow_id": f"report-kafka-{RUN}", "owner": "acme", "name": "file-landed",
        "payload": '{"path": "s3://in/2026-11-28.csv"}', "reject": False, "step": None,
        "sent_at_ms": now_ms(), "reason": None, "requested_by": "a plain producer",
    })  # fmt: skip
    producer = Producer({"bootstrap.servers": pipeline_topics.settings.bootstrap_servers,
                         "partitioner": "murmur2_random"})  # Java's: docs/submitting.md
    producer.produce(pipeline_topics.intake, key=f"report-kafka-{RUN}".encode(),
                     value=header + body.getvalue())  # fmt: skip
    assert producer.flush(30) == 0

    gate = reaches(admin, ids["gate"], "SUCCEEDED")
    assert json.loads(gate["result"]) == {"path": "s3://in/2026-11-28.csv"}
    reaches(admin, ids["publish"], "SUCCEEDED")
    slept = reaches(admin, ids["pause"], "SUCCEEDED")
    assert slept["state"] == "SUCCEEDED"


def test_a_signal_over_http_names_the_steps_waiting_and_refuses_bad_input(
    admin: httpx.Client,
) -> None:
    ids = submit(admin, "report-http", {"name": "gate", "wait": {"signal": "go"}})
    reaches(admin, ids["gate"], "WAITING")
    bad = admin.post(f"/api/v1/workflows/report-http-{RUN}/signals?owner=acme", json={"name": " "})
    assert bad.status_code == 422 and "name" in bad.text
    unknown = admin.post("/api/v1/workflows/nope/signals?owner=acme", json={"name": "go"})
    assert unknown.status_code == 404
    sent = admin.post(f"/api/v1/workflows/report-http-{RUN}/signals?owner=acme",
                      json={"name": "go", "payload": [1, 2]})  # fmt: skip
    assert sent.status_code == 202, sent.text
    assert sent.json()["waiting"] == [ids["gate"]]
    assert json.loads(reaches(admin, ids["gate"], "SUCCEEDED")["result"]) == [1, 2]
    bolt = {"Authorization": f"Bearer {TOKENS['bolt']}"}
    with httpx.Client(base_url=str(admin.base_url), timeout=30, headers=bolt) as other:
        refused = other.post(f"/api/v1/workflows/report-http-{RUN}/signals", json={"name": "go"})
        assert refused.status_code == 404, "another owner's workflow is not found"


ITEMS = 30

STEPS = [
    {"name": "files", "wait": {"signal": "files-listed", "timeout": "2m"}},
    {"name": "render", "depends_on": ["files"],
     "map": {"over": "files", "job_type": "data.process", "params": {"sleep_s": 1},
             "max_concurrency": 6}},
    {"name": "pause", "depends_on": ["files"], "sleep": {"for": "3s"}},
    {"name": "report", "depends_on": ["render", "pause"], "job_type": "data.process"},
]  # fmt: skip


def test_a_wait_a_sleep_and_a_map_are_drawn_as_they_unfold(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    workflow_id = f"drawing-{RUN}"
    reply = admin.post("/api/v1/workflows", json={"owner": "acme", "workflow_id": workflow_id,
                                                  "steps": STEPS})  # fmt: skip
    assert reply.status_code == 201, reply.text
    ids = reply.json()["job_ids"]
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{ids['report']}")
    graph = page.locator("#workflow-graph")
    box = {name: graph.locator(f"[data-node='{job_id}']") for name, job_id in ids.items()}

    expect(box["files"]).to_have_attribute("data-state", "WAITING", timeout=20_000)
    expect(box["files"]).to_have_attribute("data-kind", "wait")
    expect(box["files"]).to_contain_text("waits for signal 'files-listed'")
    expect(box["files"].locator("path.glyph.wait")).to_have_count(1)
    expect(box["render"]).to_have_attribute("data-kind", "map")
    expect(box["render"]).to_contain_text("over 'files', 6 at a time")
    expect(box["pause"]).to_contain_text("sleeps 3.0 s")
    expect(box["report"]).to_have_attribute("data-state", "BLOCKED")
    shot(page, tmp_path, "waiting-for-signal")

    sent = admin.post(f"/api/v1/workflows/{workflow_id}/signals?owner=acme",
                      json={"name": "files-listed",
                            "payload": [f"f{i}.png" for i in range(ITEMS)]})  # fmt: skip
    assert sent.status_code == 202, sent.text
    assert sent.json()["waiting"] == [ids["files"]]

    expect(box["files"]).to_have_attribute("data-state", "SUCCEEDED", timeout=20_000)
    expect(box["files"]).to_contain_text("signal 'files-listed' came")
    expect(box["render"]).to_have_attribute("data-items-total", str(ITEMS), timeout=20_000)
    expect(box["render"]).to_have_attribute("data-state", "WAITING")
    expect(box["pause"]).to_contain_text("sleeps until")

    # Items run and end a few at a time while the page is open: the count grows on the
    # live stream alone (no reload), seen between none and all with some running.
    def midway() -> str | None:
        text, done, bar = box["render"].evaluate(  # one drawing, read at once
            "n => [n.textContent, Number(n.dataset.itemsDone ?? 0),"
            " n.querySelectorAll('[data-segment=RUNNING]').length]")  # fmt: skip
        return text if 0 < done < ITEMS and "running" in text and bar == 1 else None

    seen = wait_for(midway, timeout_s=30, what="items done and running")
    assert f" of {ITEMS} items done" in seen
    shot(page, tmp_path, "mapping")

    for name in ids:
        expect(box[name]).to_have_attribute("data-state", "SUCCEEDED", timeout=40_000)
    expect(box["render"]).to_have_attribute("data-items-done", str(ITEMS))
    expect(box["render"]).to_contain_text(f"{ITEMS} of {ITEMS} items done")
    expect(box["render"].locator("[data-segment]")).to_have_count(1)  # all SUCCEEDED
    expect(box["pause"]).to_contain_text("slept until")
    expect(graph.locator("[data-node]")).to_have_count(len(STEPS))  # no box per item
    expect(graph.locator("path.edge")).to_have_count(4)
    expect(graph.locator(f"path.edge[data-edge='{ids['render']}>{ids['report']}']")).to_have_count(1)
    shot(page, tmp_path, "done")

    body = admin.get(f"/api/v1/workflows/{workflow_id}?owner=acme").json()
    steps = {step["step"]: step for step in body["steps"]}
    assert next(iter(steps)) == "files" and list(steps)[-1] == "report" and len(steps) == 4
    assert steps["render"]["items"] == {"total": ITEMS, "by_state": {"SUCCEEDED": ITEMS}}
    assert steps["files"]["held"]["signal"] == "files-listed"
    assert steps["pause"]["held"]["for_ms"] == 3000
    item = admin.get(f"/api/v1/jobs/{ids['render']}").json()
    assert json.loads(item["result"]) == {"items": ITEMS}


def test_an_items_page_outlines_its_map(page: Page, admin: httpx.Client) -> None:
    workflow_id = f"drawing-item-{RUN}"
    steps = [{"name": "list", "wait": {"signal": "go"}},
             {"name": "each", "depends_on": ["list"],
              "map": {"over": "list", "job_type": "data.process"}}]  # fmt: skip
    ids = admin.post("/api/v1/workflows", json={"owner": "acme", "workflow_id": workflow_id,
                                                "steps": steps}).json()["job_ids"]  # fmt: skip
    wait_for(lambda: admin.get(f"/api/v1/jobs/{ids['list']}").json()["state"] == "WAITING",
             timeout_s=20, what="the wait")  # fmt: skip
    admin.post(f"/api/v1/workflows/{workflow_id}/signals?owner=acme",
               json={"name": "go", "payload": ["a", "b"]})  # fmt: skip
    item = item_job_id("acme", workflow_id, "each", 1)
    wait_for(lambda: admin.get(f"/api/v1/jobs/{item}").status_code == 200, timeout_s=20,
             what="item 1 in the views")  # fmt: skip
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{item}")
    graph = page.locator("#workflow-graph")
    expect(graph.locator(".current")).to_have_attribute("data-node", ids["each"], timeout=20_000)
    expect(graph.locator("[data-node]")).to_have_count(2)


def test_a_trigger_is_defined_and_removed_on_the_triggers_page_and_a_jobs_keys_shown(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    acme = {"Authorization": f"Bearer {TOKENS['acme']}"}
    name = f"orders-paid-{RUN}"
    log_in(page, TOKENS["acme"])
    page.goto("/#/triggers")
    form = page.locator("#trigger-form")
    form.locator("[name=name]").fill(name)
    form.locator("[name=source]").fill(f"orders-{RUN}")
    form.locator("[name=filter]").fill("value.status == 'paid'")
    form.locator("[name=job_type]").fill("data.process")
    form.locator("[name=params]").fill('{"order": "value.id"}')
    form.locator("[name=keys]").fill("{not json")
    form.locator("button[type=submit]").click()
    expect(page.locator("#triggers-message")).to_contain_text("keys: not JSON")
    form.locator("[name=keys]").fill('{"concurrency": {"key": "order-{params.order}"}}')
    form.locator("button[type=submit]").click()
    expect(page.locator("#triggers-message")).to_contain_text(f"defined: {name}")
    row = page.locator(f"#triggers tr[data-trigger='{name}']")
    expect(row).to_contain_text("value.status == 'paid'")
    shot(page, tmp_path, "triggers")
    shown = admin.get(f"/api/v1/triggers/{name}", headers=acme).json()
    assert shown["job"]["keys"] == {"concurrency": {"key": "order-{params.order}"}}, shown
    row.locator(f"[data-remove='{name}']").click()
    expect(page.locator("#triggers-message")).to_contain_text(f"removed: {name}")
    expect(row).to_have_count(0)
    gone = admin.get(f"/api/v1/triggers/{name}", headers=acme)
    assert gone.status_code == 404, gone.text

    reply = admin.post("/api/v1/jobs", json={
        "owner": "acme", "job_type": "data.process", "params": {"customer": 42},
        "run_at": "2030-01-01T00:00Z",
        "keys": {"concurrency": {"key": "customer-{params.customer}", "limit": 2}}})  # fmt: skip
    assert reply.status_code == 201, reply.text
    page.goto(f"/#/jobs/{reply.json()['job_id']}")
    expect(page.locator("#job-keys")).to_have_text("concurrency customer-42 (limit 2)")
