"""The pages a user of a job scheduler expects, in a real headless Chromium over the real
API, pipeline and broker: a job's event timeline, the schedules page with pause and
resume, a re-run with edited parameters, bulk cancel and redrive on a filtered list, and
times shown with their zone (UTC or the browser's) with a creation time range. Each page
is shot at 1280 and 800 pixels wide into the test's tmp_path."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from jobstream._connectors.api.server import ApiServer
from jobstream._pipeline.clock import now_ms
from jobstream._pipeline.jobs.client import JobClient
from tests.connectors.api.conftest import ADMIN, TOKENS
from tests.connectors.dashboard.conftest import log_in, shot
from tests.support.waiting import wait_for

FAST = {"initial_backoff_ms": 200, "jitter": 0}


def submit(admin: httpx.Client, **body: Any) -> str:
    reply = admin.post("/api/v1/jobs", json={"job_type": "data.process", "owner": "acme", **body})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["job_id"])


def job(admin: httpx.Client, job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = admin.get(f"/api/v1/jobs/{job_id}").json()
    return found


def reaches(admin: httpx.Client, job_id: str, state: str, timeout_s: float = 90) -> None:
    wait_for(lambda: job(admin, job_id).get("state") == state, timeout_s=timeout_s,
             interval_s=0.3, what=f"{job_id} {state}")  # fmt: skip


def both_widths(page: Page, tmp_path: Path, name: str) -> None:
    """Shots at 1280 and at 800 pixels wide; the page must not scroll sideways at 800 (a
    wide table scrolls in its own box)."""
    shot(page, tmp_path, f"{name}-1280")
    page.set_viewport_size({"width": 800, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
    shot(page, tmp_path, f"{name}-800")
    page.set_viewport_size({"width": 1280, "height": 800})


def test_a_job_page_shows_its_event_timeline_with_lateness(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    job_id = submit(admin, params={"fail_until_attempt": 2, "sleep_s": 1.6}, retry=FAST)
    reaches(admin, job_id, "SUCCEEDED")
    api = admin.get(f"/api/v1/jobs/{job_id}/events").json()["events"]
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    rows = page.locator("#timeline tbody tr")
    expect(rows).to_have_count(len(api))
    kinds = [str(rows.nth(i).get_attribute("data-kind")) for i in range(len(api))]
    runs = [kind for kind in kinds if kind not in ("SCHEDULED", "HEARTBEAT")]
    assert runs == ["FIRED", "STARTED", "FAILED", "RETRY_SCHEDULED", "FIRED", "STARTED",
                    "SUCCEEDED"], kinds  # fmt: skip
    fired = page.locator("#timeline tr[data-kind=FIRED]").first
    expect(fired.locator("[data-lateness]")).to_have_text(re.compile(r"^\d+(\.\d)? m?s$"))
    assert int(str(fired.locator("[data-lateness]").get_attribute("data-lateness"))) >= 0
    expect(fired).to_contain_text("due ")
    started = page.locator("#timeline tr[data-kind=STARTED]")
    expect(started.nth(0)).to_contain_text("data.process-0")  # the worker
    expect(started.nth(0).locator("[data-lateness]")).to_have_text(re.compile(r"\d"))
    beats = page.locator("#timeline tr[data-kind=HEARTBEAT]")
    expect(beats).to_have_count(2)  # one row per run, whatever the count
    expect(beats.first).to_contain_text(re.compile(r"HEARTBEAT \u00d7\d+"))
    expect(page.locator("#timeline tr[data-kind=FAILED]")).to_contain_text(
        "Transient: attempt 1 fails")
    # The run's end tells when its handler began (after its STARTED, the claim): the
    # timeline's lateness there is that launch's, and it is the execution's start.
    [claimed] = [e for e in api if e["kind"] == "STARTED" and e["attempt"] == 2]
    [ended] = [e for e in api if e["kind"] == "SUCCEEDED"]
    launched = ended["launched_at_ms"]
    assert launched is not None and claimed["at_ms"] <= launched <= ended["at_ms"]
    assert ended["lateness_ms"] == launched - ended["scheduled_at_ms"] >= 0
    runs_out = admin.get(f"/api/v1/jobs/{job_id}/executions").json()["executions"]
    assert [r["started_at_ms"] for r in runs_out if r["attempt"] == 2] == [launched]
    succeeded = page.locator("#timeline tr[data-kind=SUCCEEDED]")
    expect(succeeded).to_contain_text("handler began ")
    expect(succeeded.locator("[data-lateness]")).to_have_attribute(
        "data-lateness", str(ended["lateness_ms"]))
    expect(page.locator("#view")).not_to_contain_text("null")
    both_widths(page, tmp_path, "timeline")


def test_the_schedules_page_lists_next_runs_and_pauses_and_resumes(
    page: Page, api: ApiServer, admin: httpx.Client, tmp_path: Path
) -> None:
    cron = {"expression": "0 0 1 1 *", "timezone": "Asia/Tokyo"}
    job_id = submit(admin, cron=cron)
    reaches(admin, job_id, "SCHEDULED", 60)
    with JobClient(api.settings) as client:
        nightly = client.submit_workflow([{"name": "extract", "job_type": "data.process"},
                                          {"name": "load", "job_type": "data.process",
                                           "depends_on": ["extract"]}],
                                         owner="acme", schedule="0 3 * * *")  # fmt: skip
    # a run now, so that the job has a last run (it keeps its schedule)
    assert admin.post(f"/api/v1/jobs/{job_id}/trigger").status_code == 202
    wait_for(lambda: job(admin, job_id)["runs"] >= 1 and job(admin, job_id)["state"] == "SCHEDULED",
             timeout_s=60, interval_s=0.3, what="the triggered run done")  # fmt: skip
    log_in(page, TOKENS["acme"])
    page.click("#nav a[data-page=schedules]")
    row = page.locator(f"#schedules tr[data-schedule='{job_id}']")
    expect(row.locator(f"[data-cron='{job_id}']")).to_have_text("0 0 1 1 *")
    expect(row).to_contain_text("Asia/Tokyo")
    year = datetime.now(UTC).year
    first = datetime(year + 1, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")).astimezone(UTC)
    runs = row.locator("[data-next-run]")
    expect(runs).to_have_count(5)
    expect(runs.first).to_have_text(f"{first:%Y-%m-%d %H:%M} UTC")  # 15:00 UTC on 31 Dec
    expect(row.locator("[data-last-runs] [data-state]").first).to_have_text("SUCCEEDED",
                                                                            timeout=15_000)
    flow = page.locator(f"#schedules tr[data-schedule='{nightly.workflow_id}']")
    expect(flow).to_have_attribute("data-kind", "workflow")
    expect(flow).to_contain_text("extract, load")
    expect(flow.locator("[data-next-run]")).to_have_count(5)
    both_widths(page, tmp_path, "schedules")
    row.locator("[data-schedule-command=pause]").click()
    expect(row.locator("[data-paused]")).to_have_attribute("data-paused", "true", timeout=30_000)
    expect(row.locator("[data-paused]")).to_have_text("PAUSED")
    expect(row.locator("ol.runs.paused")).to_have_count(1)
    assert job(admin, job_id)["state"] == "PAUSED"
    shot(page, tmp_path, "schedules-paused")
    row.locator("[data-schedule-command=resume]").click()
    expect(row.locator("[data-paused]")).to_have_attribute("data-paused", "false", timeout=30_000)
    expect(row.locator("[data-paused] [data-state]")).to_have_text("SCHEDULED")
    flow.locator("[data-schedule-command=pause]").click()  # a workflow's, through its own status
    expect(flow.locator("[data-paused]")).to_have_attribute("data-paused", "true", timeout=30_000)
    flow.locator("[data-schedule-command=resume]").click()
    expect(flow.locator("[data-paused]")).to_have_attribute("data-paused", "false", timeout=30_000)
    log_in(page, TOKENS["bolt"])  # another owner sees none of acme's
    page.goto("/#/schedules")
    expect(page.locator("#view")).to_contain_text("No recurring job or workflow.")


def test_re_run_a_job_with_edited_parameters(page: Page, admin: httpx.Client,
                                             tmp_path: Path) -> None:  # fmt: skip
    retry = {**FAST, "max_attempts": 4}
    job_id = submit(admin, params={"n": 1}, retry=retry, priority="HIGH",
                    labels={"team": "rerun"})  # fmt: skip
    reaches(admin, job_id, "SUCCEEDED")
    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#rerun")).to_be_hidden()
    page.click("#rerun-open")
    box = page.locator("#rerun-params")
    expect(box).to_have_value('{\n  "n": 1\n}')
    box.fill('{"n": 7')
    expect(page.locator("#rerun-message")).to_contain_text("Not valid JSON")
    expect(page.locator("#rerun-submit")).to_be_disabled()
    box.fill("[7]")
    expect(page.locator("#rerun-message")).to_have_text(
        "The parameters must be a JSON object ({...}).")
    shot(page, tmp_path, "rerun-invalid")
    box.fill('{"n": 7}')
    expect(page.locator("#rerun-message")).to_have_text("")
    shot(page, tmp_path, "rerun-editing")
    page.click("#rerun-submit")
    page.wait_for_url(re.compile(r"#/jobs/(?!" + job_id + ")"))
    new_id = page.url.rsplit("/", 1)[-1]
    expect(page.locator("#job-fields")).to_contain_text(new_id)
    reaches(admin, new_id, "SUCCEEDED")
    made = job(admin, new_id)
    assert made["params"] == {"n": 7}
    assert (made["job_type"], made["owner"], made["priority"]) == ("data.process", "acme", "HIGH")
    assert made["retry"]["max_attempts"] == 4
    assert made["labels"] == {"team": "rerun", "rerun.of": job_id}
    assert made["schedule"]["cron"] is None
    expect(page.locator("#job-fields [data-state]")).to_have_text("SUCCEEDED", timeout=30_000)
    both_widths(page, tmp_path, "rerun-new-job")


def test_bulk_cancel_and_redrive_on_a_filtered_list(page: Page, admin: httpx.Client,
                                                    tmp_path: Path) -> None:  # fmt: skip
    later = [submit(admin, run_at="2030-01-01T00:00:00Z", labels={"batch": "bulk"})
             for _ in range(4)]  # fmt: skip
    dead = submit(admin, params={"fail_until_attempt": 3}, labels={"batch": "bulk"},
                  retry={**FAST, "max_attempts": 2})  # fmt: skip
    for job_id in later:
        reaches(admin, job_id, "SCHEDULED", 60)
    reaches(admin, dead, "DEAD_LETTERED")
    log_in(page, ADMIN)
    page.goto("/#/jobs?label=batch%3Dbulk")
    expect(page.locator("#jobs tbody tr")).to_have_count(5)
    expect(page.locator("[data-bulk=cancel]")).to_be_disabled()
    page.check("#select-all")
    expect(page.locator("#bulk-count")).to_have_text("5 selected")
    page.uncheck("#select-all")
    expect(page.locator("#bulk-count")).to_have_text("0 selected")
    for job_id in later[:3]:
        page.check(f"[data-select='{job_id}']")
    expect(page.locator("#select-all")).not_to_be_checked()
    page.click("[data-bulk=cancel]")
    expect(page.locator("#bulk-confirm")).to_contain_text("Cancel 3 jobs?")
    shot(page, tmp_path, "bulk-confirm")
    page.click("[data-bulk-dismiss=cancel]")  # "No" sends nothing
    expect(page.locator("#bulk-confirm")).to_be_hidden()
    assert all(job(admin, job_id)["state"] == "SCHEDULED" for job_id in later)
    page.click("[data-bulk=cancel]")
    page.click("[data-bulk-confirm=cancel]")
    results = page.locator("#bulk-results tbody tr")
    expect(results).to_have_count(3, timeout=30_000)
    expect(page.locator("#bulk-results tr[data-result=ok]")).to_have_count(3)
    expect(page.locator("#bulk-summary h2 span")).to_have_text("Cancel: 3 cancelled, 0 failed")
    expect(page.locator("#bulk-count")).to_have_text("0 selected")
    for job_id in later[:3]:
        expect(page.locator(f"#jobs tr[data-job='{job_id}'] [data-state]")).to_have_text(
            "CANCELLED", timeout=30_000)
    assert [job(admin, job_id)["state"] for job_id in later] == ["CANCELLED"] * 3 + ["SCHEDULED"]
    for job_id in later[:3]:
        commands = job(admin, job_id)["commands"]
        assert [(c["kind"], c["by"]) for c in commands] == [("CANCELLED", "api:admin:ops-root")]
    shot(page, tmp_path, "bulk-cancelled")
    # a redrive of the dead letter and of a job that is not one: one redriven, one skipped
    page.check(f"[data-select='{dead}']")
    page.check(f"[data-select='{later[3]}']")
    page.click("[data-bulk=redrive]")
    expect(page.locator("#bulk-confirm")).to_contain_text("Redrive 2 jobs?")
    page.click("[data-bulk-confirm=redrive]")
    expect(page.locator("#bulk-summary h2 span")).to_have_text(
        "Redrive: 1 redriven, 0 failed, 1 skipped", timeout=60_000)
    expect(page.locator(f"#bulk-results tr[data-job='{later[3]}']")).to_contain_text(
        "not dead-lettered (SCHEDULED)")
    expect(page.locator(f"#jobs tr[data-job='{dead}'] [data-state]")).to_have_text(
        "SUCCEEDED", timeout=60_000)
    both_widths(page, tmp_path, "bulk")
    page.click("#bulk-dismiss")
    expect(page.locator("#bulk-results")).to_have_count(0)
    page.check(f"[data-select='{later[3]}']")  # the job left for 2030 runs now
    page.click("[data-bulk=trigger]")
    expect(page.locator("#bulk-confirm")).to_contain_text("Trigger 1 job?")
    page.click("[data-bulk-confirm=trigger]")
    expect(page.locator(f"#bulk-results tr[data-job='{later[3]}']")).to_contain_text("triggered")
    expect(page.locator(f"#jobs tr[data-job='{later[3]}'] [data-state]")).to_have_text(
        "SUCCEEDED", timeout=60_000)


@pytest.fixture
def tokyo(browser: Browser, api: ApiServer) -> Iterator[Page]:
    """A browser whose zone is Asia/Tokyo (UTC+9, no daylight-saving time)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=api.url,
                                  timezone_id="Asia/Tokyo")  # fmt: skip
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert errors == [], f"the page raised: {errors}"


def test_times_show_their_zone_and_the_toggle_is_remembered(
    tokyo: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    page = tokyo
    job_id = submit(admin, run_at="2030-01-01T00:00:00Z", labels={"batch": "zones"})
    reaches(admin, job_id, "SCHEDULED", 60)
    log_in(page, TOKENS["acme"])
    page.evaluate("localStorage.removeItem('jobstream-zone')")
    page.goto(f"/#/jobs/{job_id}")
    fields = page.locator("#job-fields")
    expect(page.locator("#zone")).to_have_text("Times: UTC")
    expect(fields).to_contain_text("at 2030-01-01 00:00:00.000 UTC")
    page.click("#zone")
    expect(page.locator("#zone")).to_have_text("Times: local (GMT+9)")
    expect(fields).to_contain_text("at 2030-01-01 09:00:00.000 GMT+9")
    shot(page, tmp_path, "zone-local")
    page.reload()  # remembered
    expect(page.locator("#job-fields")).to_contain_text("at 2030-01-01 09:00:00.000 GMT+9")
    page.goto("/#/jobs?label=batch%3Dzones")
    expect(page.locator("#jobs th").nth(6)).to_have_text("created (GMT+9)")
    page.click("#zone")
    expect(page.locator("#jobs th").nth(6)).to_have_text("created (UTC)")
    expect(page.locator("#view")).to_contain_text("created from (UTC)")


def test_a_creation_time_range_filters_the_jobs_list(
    tokyo: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    page = tokyo
    first = submit(admin, run_at="2030-01-01T00:00:00Z", labels={"batch": "range"})
    middle = now_ms()
    wait_for(lambda: now_ms() > middle + 2, what="a later millisecond")
    second = submit(admin, run_at="2030-01-01T00:00:00Z", labels={"batch": "range"})
    reaches(admin, second, "SCHEDULED", 60)
    log_in(page, TOKENS["acme"])
    page.evaluate("localStorage.setItem('jobstream-zone', 'local')")
    page.goto(f"/#/jobs?label=batch%3Drange&since={middle}")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    expect(page.locator(f"#jobs tr[data-job='{second}']")).to_have_count(1)
    page.goto(f"/#/jobs?label=batch%3Drange&until={middle}")
    expect(page.locator(f"#jobs tr[data-job='{first}']")).to_have_count(1)
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    # typed as Tokyo wall time: 2000-01-01 00:00 in Tokyo is 1999-12-31 15:00 UTC
    page.fill("#job-search input[name=until]", "2000-01-01T00:00")
    page.click("#job-search button[type=submit]")
    expect(page.locator("#jobs-note")).to_have_text("No jobs match.")
    assert "until=946652400000" in page.url
    expect(page.locator("#job-search input[name=until]")).to_have_value("2000-01-01T00:00")
    both_widths(page, tmp_path, "jobs-range")


def test_every_page_reads_at_800_pixels_wide(page: Page, admin: httpx.Client,
                                             tmp_path: Path) -> None:  # fmt: skip
    job_id = submit(admin, params={"n": 1})
    reaches(admin, job_id, "SUCCEEDED")
    log_in(page, ADMIN)
    page.set_viewport_size({"width": 800, "height": 900})
    drawn = {"overview": "[data-count=total]", "jobs": "#jobs tbody tr",
             "schedules": "#schedules", "dlq": "#dead-letters", "workers": "#workers tbody tr",
             f"jobs/{job_id}": "#timeline tbody tr"}  # what each page draws from its data
    for path, what in drawn.items():
        page.goto(f"/#/{path}")
        expect(page.locator(what).first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 800, path
        shot(page, tmp_path, f"{'job' if '/' in path else path}-800")
