"""A running job's progress on its page, in a real headless Chromium over the real API,
pipeline and broker: each report of the handler shows as a bar and its message within a
second of the call, redrawn in place while the job runs, and the ended job keeps its last.
Screenshots go to the test's tmp_path."""

from __future__ import annotations

from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.connectors.api.conftest import ADMIN
from tests.connectors.dashboard.conftest import log_in, shot

STEPS, PAUSE_S = 4, 2.0
DELAY_S = 5.0
"""Before the first report: the page opens meanwhile, so that its load (seconds on a busy
machine) is not counted as the first report's latency."""

SHOWN = """([k, steps]) => {
  const bar = document.querySelector('#job-progress');
  if (!bar || !bar.textContent.includes(`step ${k} of ${steps}`)) return null;
  return {
    latency: Date.now() - Number(bar.dataset.atMs),
    value: bar.querySelector('progress').value,
    text: bar.textContent,
    state: document.querySelector('#job-fields [data-state]').textContent,
    sameFields: document.querySelector('#job-fields') === window.fieldsBefore,
  };
}"""


def test_a_running_jobs_progress_shows_on_its_page_within_a_second(
    page: Page, admin: httpx.Client, tmp_path: Path
) -> None:
    log_in(page, ADMIN)
    expect(page.locator("#live")).to_have_text("live")
    body = {"job_type": "data.process", "owner": "acme", "retry": {"max_attempts": 1},
            "params": {"progress_steps": STEPS, "progress_pause_s": PAUSE_S,
                       "progress_delay_s": DELAY_S}}  # fmt: skip
    response = admin.post("/api/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    job_id = response.json()["job_id"]
    page.goto(f"/#/jobs/{job_id}")
    expect(page.locator("#job-fields")).to_be_visible()

    latencies = []
    for k in range(1, STEPS + 1):
        page.evaluate("window.fieldsBefore = document.querySelector('#job-fields')")
        found = page.wait_for_function(SHOWN, arg=[k, STEPS], polling=10,
                                       timeout=30_000).json_value()  # fmt: skip
        latencies.append(found["latency"])
        assert found["state"] == "RUNNING", found
        assert found["value"] == k / STEPS
        assert f"{k * 100 // STEPS}% step {k} of {STEPS}" in found["text"], found
        if k > 1:
            assert found["sameFields"], "a report alone redraws the bar, not the page"
        if k == 2:
            shot(page, tmp_path, "job-progress-running")
    print(f"\nprogress latency, handler's call to the job page: {latencies} ms")
    assert max(latencies) < 1000, latencies

    expect(page.locator("#job-fields [data-state]")).to_have_text("SUCCEEDED", timeout=30_000)
    bar = page.locator("#job-progress")
    expect(bar).to_contain_text(f"100% step {STEPS} of {STEPS}")
    assert bar.locator("progress").evaluate("el => el.value") == 1
    shot(page, tmp_path, "job-progress-ended")
