"""The job page draws a workflow's waits, sleeps and maps as it unfolds, on the real pipeline,
API and broker, in Chromium: a wait WAITING for its signal, then SUCCEEDED once the signal
comes over HTTP; a sleep until its instant; a map of 30 items as one box whose count of
items done grows with the live stream, never a box per item."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from jobstream._pipeline.workflows.members import item_job_id
from tests.connectors.api.conftest import TOKENS
from tests.connectors.dashboard.conftest import log_in, shot
from tests.support.waiting import wait_for

RUN = uuid.uuid4().hex[:8]
"""In the workflow id: a broker given by KAFKA_BOOTSTRAP_SERVERS keeps earlier runs' jobs."""
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
