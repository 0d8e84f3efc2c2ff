"""The dashboard's world: the whole pipeline as processes, the API serving the page, and a
headless Chromium at 1280x800 whose screenshots land in each test's tmp_path.

One of each for the package: its modules run in one of make test's processes
(tests/support/scheduling.py), on one stack, one API and one browser, each test on jobs of
its own (by id, owner or label). A module that needs another pipeline (test_logs_page.py)
overrides ``pipeline_topics``, ``stack`` and ``api`` for itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page

from jobstream._connectors.api.server import ApiServer
from jobstream._ops.stack import Stack
from jobstream._pipeline.topics import Topics
from tests.connectors.api.conftest import ADMIN, api_settings
from tests.support.browser import chromium
from tests.support.stack import pipeline_fixtures


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


pipeline_topics, stack = pipeline_fixtures("dash", lease_s=5, scope="package")


@pytest.fixture(scope="package")
def api(pipeline_topics: Topics, stack: Stack,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:  # fmt: skip
    with serving(pipeline_topics, tmp_path_factory.mktemp("api")) as running:
        yield running


@contextmanager
def serving(pipeline_topics: Topics, folder: Path) -> Iterator[ApiServer]:
    """The API with the test tokens, on ``pipeline_topics``."""
    # The default staleness, 15 s: three of a worker's 5 s heartbeats. At 5 s, as it was, a
    # live worker whose heartbeat was a little late read as stale until the page's next
    # 5 s reload (tests/connectors/dashboard/test_pages.py failed so on a loaded CI).
    with ApiServer(pipeline_topics.settings, api_settings(folder)) as running:
        yield running


@pytest.fixture
def admin(api: ApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {ADMIN}"},
                      timeout=60) as client:  # fmt: skip
        yield client


@pytest.fixture
def page(browser: Browser, api: ApiServer, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=api.url)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield opened
    finally:
        opened.screenshot(path=str(tmp_path / "last.png"), full_page=True)
        context.close()
    assert errors == [], f"the page raised: {errors}"


def shot(page: Page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def log_in(page: Page, token: str) -> None:
    """Log in afresh, as whoever was logged in before logs out."""
    page.goto("/")
    page.evaluate("sessionStorage.clear()")
    page.reload()
    page.fill("#token", token)
    page.click("#login-form button[type=submit]")
