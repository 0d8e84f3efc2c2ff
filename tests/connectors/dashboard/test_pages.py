"""The dashboard in a real headless Chromium, over the real API, pipeline and broker:
the overview's counts against the API while jobs run, a job's attempts, a redrive from
the dead-letter page, a cancel confirmed, the commands a job was given, a refused token,
and every page and /docs loaded from this origin only. Screenshots go to each test's tmp_path."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.jobs.client import JobClient
from tests.connectors.api.conftest import ADMIN, TOKENS
from tests.connectors.dashboard.conftest import log_in, shot
from tests.support.e2e_app import pattern
from tests.support.waiting import wait_for

FAST = {"initial_backoff_ms": 200, "jitter": 0}


def submit(admin: httpx.Client, **params: Any) -> str:
    retry = params.pop("retry", None)
    body = {"job_type": "data.process", "owner": "acme", "params": params, "retry": retry}
    response = admin.post("/api/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["job_id"])


def state_of(admin: httpx.Client, job_id: str) -> str:
    return str(admin.get(f"/api/v1/jobs/{job_id}").json()["state"])


def shown_counts(page: Page) -> dict[str, int]:
    """The overview's counts, read in one go: the live page redraws them between reads, so
    a cell counted first may be gone when read one by one."""
    cells = page.eval_on_selector_all(
        "[data-state-count]", "els => els.map(e => [e.dataset.stateCount, e.innerText])")
    return {str(state): int(text) for state, text in cells if int(text)}


def test_a_wrong_token_is_refused(page: Page, tmp_path: Path) -> None:
    log_in(page, "not-a-token")
    expect(page.locator("#login-error")).to_contain_text("refused")
    expect(page.locator("#nav")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('jobstream-token')") is None
    shot(page, tmp_path, "refused")
    log_in(page, TOKENS["acme"])
    expect(page.locator("#who")).to_have_text("owner acme")
    expect(page.locator("#login")).to_be_hidden()


def test_overview_counts_match_the_api_while_jobs_run(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    log_in(page, ADMIN)
    expect(page.locator("#live")).to_have_text("live")
    ids = [submit(admin, sleep_s=1.5, batch="overview") for _ in range(12)]

    def matches_while_running() -> dict[str, int] | None:
        api = admin.get("/api/v1/overview").json()["by_state"]
        return api if shown_counts(page) == api and api.get("RUNNING") else None

    during = wait_for(matches_while_running, timeout_s=90, interval_s=0.2,
                      what="the page's counts to equal the API's while jobs run")  # fmt: skip
    shot(page, tmp_path, "overview-running")
    assert sum(during.values()) == int(page.locator("[data-count=total]").inner_text())
    wait_for(lambda: all(state_of(admin, i) == "SUCCEEDED" for i in ids), timeout_s=120,
             interval_s=0.5, what="every job to succeed")  # fmt: skip
    expect(page.locator("[data-state-count=SUCCEEDED]")).to_have_text(
        str(admin.get("/api/v1/overview").json()["by_state"]["SUCCEEDED"]), timeout=15_000
    )
    assert shown_counts(page) == admin.get("/api/v1/overview").json()["by_state"]
    expect(page.locator("[data-count=workers]")).to_have_text("1")
    expect(page.locator("#lateness .threshold")).to_have_count(1)
    expect(page.locator("#throughput polyline")).not_to_have_count(0)
    shot(page, tmp_path, "overview-done")
    page.click("#nav a[data-page=workers]")
    worker = page.locator("#workers tr[data-worker='data.process-0']")
    expect(worker).to_contain_text("data.process")
    expect(worker.locator("td").nth(2)).to_have_text("4")  # its capacity
    expect(worker.locator("td").last).to_have_text("")  # not stale
    shot(page, tmp_path, "workers")


def test_a_job_page_shows_every_attempt(page: Page, admin: httpx.Client, tmp_path: Path) -> None:
    job_id = submit(admin, fail_until_attempt=2, retry=FAST)
    wait_for(lambda: state_of(admin, job_id) == "SUCCEEDED", timeout_s=90, interval_s=0.5,
             what="the job to succeed on its second attempt")  # fmt: skip
    log_in(page, ADMIN)
    page.goto(f"/#/jobs/{job_id}")
    attempts = page.locator("#attempts tbody tr")
    expect(attempts).to_have_count(2)
    runs = admin.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    first, second = attempts.nth(0), attempts.nth(1)
    expect(first.locator("td").first).to_have_text("1")
    expect(second.locator("td").first).to_have_text("2")
    expect(first.locator("[data-state]")).to_have_text("FAILED")
    expect(first).to_contain_text("Transient: attempt 1 fails")
    expect(first).to_contain_text(runs[0]["worker_id"])
    expect(second.locator("[data-state]")).to_have_text("SUCCEEDED")
    expect(second).to_contain_text('{"attempt":2}')
    expect(page.locator("#job-fields [data-state]")).to_have_text("SUCCEEDED")
    first.locator("summary").click()
    expect(first.locator("pre")).to_contain_text("Traceback")
    shot(page, tmp_path, "job")


def test_a_result_on_jobs_results_downloads_with_the_token(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    job_id = submit(admin, result_bytes=3000)
    wait_for(lambda: state_of(admin, job_id) == "SUCCEEDED", timeout_s=90, interval_s=0.5,
             what="the job to succeed")  # fmt: skip
    wait_for(lambda: admin.get(f"/api/v1/jobs/{job_id}/result").status_code == 200,
             timeout_s=30, interval_s=0.3, what="the result served")  # fmt: skip
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    fields = page.locator("#job-fields")
    with page.expect_download() as saving:
        fields.locator("[data-result=download]").click()
    saved = saving.value
    assert saved.suggested_filename == f"{job_id}-result.bin"
    assert Path(saved.path()).read_bytes() == pattern(3000)
    fields.locator("[data-result=show]").click()
    expect(fields).to_contain_text("3000 bytes of application/octet-stream: download it")
    run = page.locator("#attempts tbody tr").first
    with page.expect_download() as saving:
        run.locator("[data-result=download]").click()
    assert saving.value.suggested_filename == f"{job_id}-attempt-1.bin"
    assert Path(saving.value.path()).read_bytes() == pattern(3000)
    shot(page, tmp_path, "result")


def test_search_finds_a_job_by_id_and_by_label(page: Page, admin: httpx.Client) -> None:
    body = {"job_type": "data.process", "owner": "acme", "labels": {"team": "dash"}}
    job_id = admin.post("/api/v1/jobs", json=body).json()["job_id"]
    log_in(page, TOKENS["acme"])
    page.goto("/#/jobs?label=team%3Ddash")
    expect(page.locator(f"#jobs tr[data-job='{job_id}']")).to_have_count(1)
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    page.goto("/#/jobs")
    page.fill("#job-search input[name=id]", job_id)
    page.click("#job-search button[type=submit]")
    expect(page.locator("#job-fields")).to_contain_text(job_id)
    log_in(page, TOKENS["bolt"])
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#view .error")).to_contain_text("not found")


def test_redrive_a_dead_letter_from_the_page(page: Page, admin: httpx.Client,
                                            tmp_path: Path) -> None:  # fmt: skip
    job_id = submit(admin, fail_until_attempt=3, retry={**FAST, "max_attempts": 2})
    wait_for(lambda: state_of(admin, job_id) == "DEAD_LETTERED", timeout_s=90, interval_s=0.5,
             what="the job to be dead-lettered")  # fmt: skip
    log_in(page, TOKENS["acme"])
    page.goto("/#/dlq")
    expect(page.locator(f"#dead-letters tr[data-job='{job_id}']")).to_have_count(1)
    expect(page.locator("[data-redrive]")).to_have_count(0)  # an owner may not redrive
    log_in(page, ADMIN)
    page.goto("/#/dlq?owner=acme")
    row = page.locator(f"#dead-letters tr[data-job='{job_id}']")
    expect(row).to_contain_text("exhausted")
    expect(page.locator("#view")).not_to_contain_text("null")
    shot(page, tmp_path, "dead-letters")
    row.locator(f"[data-redrive='{job_id}']").click()
    expect(page.locator("#dlq-message")).to_contain_text(f"redriven: 1 job(s) {job_id}",
                                                         timeout=30_000)  # fmt: skip
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#job-fields [data-state]")).to_have_text("SUCCEEDED", timeout=60_000)
    attempts = page.locator("#attempts tbody tr td:first-child")
    expect(attempts).to_have_text(["1", "2", "3"])
    shot(page, tmp_path, "redriven")


def open_job_for_2030(page: Page, admin: httpx.Client) -> str:
    """Submit a job scheduled for 2030 and open its page as its owner; its id."""
    body = {"job_type": "data.process", "owner": "acme", "run_at": "2030-01-01T00:00:00Z"}
    job_id = admin.post("/api/v1/jobs", json=body).json()["job_id"]
    wait_for(lambda: state_of(admin, job_id) == "SCHEDULED", timeout_s=60, what="SCHEDULED")
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    return job_id


def test_cancel_a_scheduled_job_from_its_page(page: Page, admin: httpx.Client,
                                              tmp_path: Path) -> None:  # fmt: skip
    job_id = open_job_for_2030(page, admin)
    expect(page.locator("#job-fields")).to_contain_text("at 2030-01-01 00:00:00.000")
    expect(page.locator("[data-command=pause]")).to_have_count(0)  # a one-off job
    page.click("[data-command=cancel]")  # asks first; "No" sends nothing
    expect(page.locator("#confirm")).to_contain_text("Cancel this job?")
    shot(page, tmp_path, "cancel-confirm")
    page.click("[data-dismiss=cancel]")
    expect(page.locator("#confirm")).to_be_hidden()
    expect(page.locator("#command-message")).to_have_text("")
    assert state_of(admin, job_id) == "SCHEDULED"
    page.click("[data-command=cancel]")
    page.click("[data-confirm=cancel]")
    expect(page.locator("#command-message")).to_have_text("cancel sent")
    expect(page.locator("#job-fields [data-state]")).to_have_text("CANCELLED", timeout=30_000)
    expect(page.locator("[data-command]")).to_have_count(0)  # ended: no commands
    shot(page, tmp_path, "cancelled")


def test_cancel_a_running_job_from_its_page_with_a_reason(page: Page, admin: httpx.Client,
                                                          tmp_path: Path) -> None:  # fmt: skip
    job_id = submit(admin, sleep_s=600, cancellable=True)
    wait_for(lambda: state_of(admin, job_id) == "RUNNING", timeout_s=60, what="RUNNING")
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#job-fields [data-state]")).to_have_text("RUNNING")
    expect(page.locator("#attempts tbody tr [data-state]")).to_have_text("RUNNING")
    page.fill("#cancel-reason", "wrong input file")
    shot(page, tmp_path, "running-before-cancel")
    page.click("[data-command=cancel]")
    page.click("[data-confirm=cancel]")
    expect(page.locator("#job-fields [data-state]")).to_have_text("CANCELLED", timeout=10_000)
    expect(page.locator("#cancellation")).to_contain_text("by api:acme: wrong input file")
    expect(page.locator("#cancellation")).to_contain_text("run stopped on")
    run = page.locator("#attempts tbody tr")
    expect(run.locator("[data-state]")).to_have_text("CANCELLED")
    expect(run).to_contain_text("wrong input file")
    expect(page.locator("[data-command]")).to_have_count(0)  # ended: no commands
    shot(page, tmp_path, "running-cancelled")


def test_a_job_page_lists_the_commands_it_was_given(page: Page, admin: httpx.Client,
                                                    tmp_path: Path) -> None:  # fmt: skip
    job_id = open_job_for_2030(page, admin)
    expect(page.locator("#job-fields [data-state]")).to_have_text("SCHEDULED")
    expect(page.locator("#commands")).to_have_count(0)  # none given yet: no section
    reason = "<b>moved</b> to Friday"  # shown as text, never parsed as markup
    page.fill("#cancel-reason", reason)
    page.click("[data-command=cancel]")
    page.click("[data-confirm=cancel]")
    expect(page.locator("#job-fields [data-state]")).to_have_text("CANCELLED", timeout=30_000)
    given = page.locator("#commands tbody tr")
    expect(given).to_have_count(1, timeout=10_000)
    expect(given.locator("td")).to_have_text([re.compile(r"^\d{4}-"), "CANCELLED", "api:acme",
                                             reason])  # fmt: skip
    expect(page.locator("#commands b")).to_have_count(0)
    expect(page.locator("#view")).not_to_contain_text("null")  # ended: no confirm bar
    expect(page.get_by_role("heading", name="Commands (1)")).to_be_visible()
    commands = admin.get(f"/api/v1/jobs/{job_id}").json()["commands"]
    assert [(c["kind"], c["by"], c["reason"]) for c in commands] == [
        ("CANCELLED", "api:acme", reason)]
    shot(page, tmp_path, "commands")


def test_trigger_a_far_scheduled_job_from_its_page(page: Page, admin: httpx.Client,
                                                   tmp_path: Path) -> None:  # fmt: skip
    job_id = open_job_for_2030(page, admin)
    expect(page.locator("#job-fields [data-state]")).to_have_text("SCHEDULED")
    expect(page.locator("#attempts")).to_have_count(0)
    expect(page.locator("#workflow-graph")).to_have_count(0)  # no workflow: no graph
    expect(page.locator("#view")).not_to_contain_text("null")
    shot(page, tmp_path, "before-trigger")
    page.fill("#cancel-reason", "the partner asked for it today")
    page.click("[data-command=trigger]")
    expect(page.locator("#job-fields [data-state]")).to_have_text("SUCCEEDED", timeout=60_000)
    expect(page.locator("#attempts tbody tr")).to_have_count(1)
    expect(page.locator("[data-command]")).to_have_count(0)  # ended: no commands
    expect(page.locator("#commands tbody tr td")).to_have_text(
        [re.compile(r"^\d{4}-"), "SCHEDULED", "api:acme", "the partner asked for it today"])
    assert state_of(admin, job_id) == "SUCCEEDED"
    shot(page, tmp_path, "triggered")


def test_a_job_page_draws_its_workflow(page: Page, admin: httpx.Client, tmp_path: Path) -> None:
    steps = [
        {"name": "a", "job_type": "data.process", "params": {"sleep_s": 4}},
        {"name": "b", "job_type": "data.process", "depends_on": ["a"]},
        {"name": "c", "job_type": "data.process", "depends_on": ["a"]},
        {"name": "d", "job_type": "data.process", "depends_on": ["b", "c"]},
    ]
    reply = admin.post("/api/v1/workflows", json={"steps": steps, "owner": "acme"})
    assert reply.status_code == 201, reply.text
    ids = reply.json()["job_ids"]
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{ids['d']}")
    graph = page.locator("#workflow-graph")
    # While a sleeps, d waits for b and c; then the live stream redraws the graph.
    expect(graph.locator(f"[data-node='{ids['d']}']")).to_have_attribute(
        "data-state", "BLOCKED", timeout=15_000
    )
    expect(page.locator("[data-command=cancel]")).to_have_count(1)
    expect(page.locator("[data-command=trigger]")).to_have_count(0)  # it waits for its parents
    shot(page, tmp_path, "workflow-running")
    for job_id in ids.values():
        expect(graph.locator(f"[data-node='{job_id}']")).to_have_attribute(
            "data-state", "SUCCEEDED", timeout=60_000
        )
    expect(graph.locator("[data-node]")).to_have_count(4)
    expect(graph.locator("path.edge")).to_have_count(4)
    edges = {str(graph.locator("path.edge").nth(i).get_attribute("data-edge")) for i in range(4)}
    assert edges == {f"{ids[p]}>{ids[c]}" for p, c in ("ab", "ac", "bd", "cd")}
    for name, job_id in ids.items():
        node = graph.locator(f"[data-node='{job_id}']")
        expect(node).to_have_attribute("data-state", "SUCCEEDED")
        expect(node).to_contain_text(f"{name} · data.process")
    expect(graph.locator(".current")).to_have_attribute("data-node", ids["d"])
    # Layers from the topological order: a, then b and c side by side, then d.
    xs = {name: graph.locator(f"[data-node='{i}'] rect").get_attribute("x")
          for name, i in ids.items()}  # fmt: skip
    assert float(xs["a"]) < float(xs["b"]) == float(xs["c"]) < float(xs["d"])  # type: ignore[arg-type]
    shot(page, tmp_path, "workflow")
    graph.locator(f"[data-node='{ids['a']}']").click()
    expect(page.locator("#job-fields")).to_contain_text(ids["a"])
    expect(page.locator("#workflow-graph .current")).to_have_attribute("data-node", ids["a"])


def test_a_job_no_worker_of_its_pool_serves_shows_it_waits(
        page: Page, api: ApiServer, admin: httpx.Client, tmp_path: Path) -> None:  # fmt: skip
    # The pipeline runs a data.process worker of no pool: the gpu job waits, the other runs.

    def seen(job_id: str) -> str | None:  # sent to jobs.intake: 404 until the views read it
        return admin.get(f"/api/v1/jobs/{job_id}").json().get("state")

    with JobClient(api.settings) as client:
        plain = client.submit(job_type="data.process", owner="acme", labels={"team": "pools"})
        wait_for(lambda: seen(plain) == "SUCCEEDED", timeout_s=90, interval_s=0.5,
                 what="the job of no pool done")  # fmt: skip
        gpu = client.submit(job_type="data.process", owner="acme", pool="gpu",
                            labels={"team": "pools"},
                            run_at=datetime.now(UTC) + timedelta(seconds=8))  # fmt: skip
    wait_for(lambda: seen(gpu) == "SCHEDULED", timeout_s=30, interval_s=0.2,
             what="the gpu job SCHEDULED")  # fmt: skip
    log_in(page, TOKENS["acme"])
    page.goto("/#/jobs?label=team%3Dpools")
    waiting = page.locator(f"#jobs tr[data-job='{gpu}']")
    done = page.locator(f"#jobs tr[data-job='{plain}']")
    expect(waiting.locator("[data-state]")).to_have_text("SCHEDULED")
    expect(waiting.locator(".waiting")).to_have_count(0)
    # fired, the row is redrawn from the live stream's event, which carries the flag
    expect(waiting.locator("[data-state]")).to_have_text("QUEUED", timeout=30_000)
    expect(waiting.locator("[data-waiting-pool=gpu]")).to_have_text("waiting for pool gpu")
    expect(done.locator("[data-state]")).to_have_text("SUCCEEDED")
    expect(done.locator(".waiting")).to_have_count(0)
    shot(page, tmp_path, "jobs-waiting-for-pool")
    page.goto(f"/#/jobs/{gpu}")
    fields = page.locator("#job-fields")
    expect(fields.locator("[data-state]")).to_have_text("QUEUED")
    expect(fields.locator("[data-waiting-pool=gpu]")).to_have_text("waiting for pool gpu")
    expect(fields.locator("dt").get_by_text("pool", exact=True)).to_have_count(1)
    shot(page, tmp_path, "job-waiting-for-pool")
    page.goto(f"/#/jobs/{plain}")
    expect(fields).to_contain_text(plain)
    expect(fields.locator("dt").get_by_text("pool", exact=True)).to_have_count(0)


PAGES = ("overview", "jobs", "schedules", "dlq", "workers")


def test_the_pages_and_the_docs_load_nothing_from_elsewhere(
        page: Page, api: ApiServer, admin: httpx.Client, tmp_path: Path) -> None:  # fmt: skip
    job_id = submit(admin, batch="origin")
    requested: list[str] = []
    console: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    # Chromium reports a refusal in the console too; the event also names the directive.
    page.add_init_script("document.addEventListener('securitypolicyviolation', (e) => "
                         "console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))")
    log_in(page, ADMIN)
    expect(page.locator("#who")).to_have_text("admin")
    # The live stream stays open, so a dashboard page is never network-idle: each is
    # waited for by what it draws.
    for name in PAGES:
        page.goto(f"/#/{name}")
        expect(page.locator(f"#view [data-page={name}] > *").first).to_be_visible()
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#job-fields")).to_contain_text(job_id)
    page.goto("/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("jobstream")
    expect(page.locator(".opblock").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    shot(page, tmp_path, "docs")
    elsewhere = [url for url in requested
                 if not url.startswith(f"{api.url}/") and not url.startswith("data:")]
    assert elsewhere == [], elsewhere
    assert any(url.startswith(f"{api.url}/docs/assets/") for url in requested)
    refused = [line for line in console if "Content Security Policy" in line
               or "CSP violation" in line or "Refused to" in line]  # fmt: skip
    assert refused == [], refused
