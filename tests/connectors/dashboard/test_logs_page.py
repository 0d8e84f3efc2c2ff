"""A run's log lines on the job page, in a real headless Chromium over the real API,
pipeline and broker: each attempt's "logs" link opens its own lines, a traceback under its
line, and they stay open while the page draws itself again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.kafka.ports import free_ports
from jobstream._ops.stack import Stack, components
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import TOKENS
from tests.connectors.dashboard.conftest import log_in, serving, shot
from tests.support.stack import running_stack, topics_fixture
from tests.support.waiting import wait_for

APP = "tests.support.logs_app"


pipeline_topics = topics_fixture("dashlogs")
"""The module's own topics, stack and API, not the package's (conftest.py)."""


@pytest.fixture(scope="module")
def api(pipeline_topics: Topics, stack: Stack,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:  # fmt: skip
    with serving(pipeline_topics, tmp_path_factory.mktemp("api")) as running:
        yield running


@pytest.fixture(scope="module")
def stack(pipeline_topics: Topics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The dashboard's pipeline, with a worker of the logs app's ``logs.work``."""
    parts = components(free_ports(4), app=APP, job_types=("logs.work",), lease_s=5,
                       heartbeat_s=0.5)  # fmt: skip
    with running_stack(pipeline_topics.settings, tmp_path_factory.mktemp("stack"),
                       parts) as running:  # fmt: skip
        yield running


def test_a_job_page_shows_each_runs_log_lines(page: Page, admin: httpx.Client,
                                              tmp_path: Path) -> None:  # fmt: skip
    body = {"job_type": "logs.work", "owner": "acme", "retry": {"initial_backoff_ms": 200,
            "jitter": 0}, "params": {"lines": ["reading input.csv", "wrote 120 rows"],
                                     "fail_until_attempt": 2}}  # fmt: skip
    response = admin.post("/api/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    job_id = response.json()["job_id"]
    wait_for(lambda: admin.get(f"/api/v1/jobs/{job_id}").json()["state"] == "SUCCEEDED",
             timeout_s=90, interval_s=0.5, what="the job to succeed on its second attempt")
    wait_for(lambda: admin.get(f"/api/v1/jobs/{job_id}/executions/2/logs").status_code == 200,
             timeout_s=30, interval_s=0.3, what="the second attempt's logs served")  # fmt: skip

    log_in(page, TOKENS["acme"])
    page.goto(f"/#/jobs/{job_id}")
    attempts = page.locator("#attempts")
    expect(attempts.locator("tbody > tr[data-attempt]")).to_have_count(2)
    attempts.locator("[data-logs='1']").click()
    first = attempts.locator("tr.logs[data-logs-of='1']")
    expect(first).to_contain_text("Logs of attempt 1 (3 lines)")
    expect(first).to_contain_text("reading input.csv (attempt 1)")
    expect(first).to_contain_text("wrote 120 rows (attempt 1)")
    expect(first.locator("tr.level-ERROR")).to_contain_text("giving up attempt 1")
    expect(first.locator("pre.exc")).to_contain_text("Traceback (most recent call last)")
    expect(first.locator("pre.exc")).to_contain_text("Flaky: attempt 1 fails")
    expect(first).not_to_contain_text("(attempt 2)")
    # the worker's own lines are no run's
    expect(first).not_to_contain_text("jobstream._pipeline.worker")

    attempts.locator("[data-logs='2']").click()
    second = attempts.locator("tr.logs[data-logs-of='2']")
    expect(second).to_contain_text("Logs of attempt 2 (2 lines)")
    expect(second).to_contain_text("reading input.csv (attempt 2)")
    expect(second).not_to_contain_text("(attempt 1)")
    expect(second.locator("tr.level-ERROR")).to_have_count(0)
    shot(page, tmp_path, "run-logs")

    # Drawn again (as on every update of the job): the logs that were open are open still.
    page.evaluate("document.querySelector('#attempts').id = 'drawn-before'")
    page.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    expect(page.locator("#drawn-before")).to_have_count(0)
    expect(attempts.locator("tr.logs")).to_have_count(2)
    expect(page.locator("tr.logs[data-logs-of='1']")).to_contain_text("giving up attempt 1")

    page.locator("[data-logs='1']").click()  # "hide logs"
    expect(page.locator("tr.logs[data-logs-of='1']")).to_have_count(0)
    expect(page.locator("tr.logs[data-logs-of='2']")).to_have_count(1)
