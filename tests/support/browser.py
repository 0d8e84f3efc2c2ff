"""Headless Chromium (Debian's ``chromium``) driven by Playwright, for the dashboard tests.

Playwright's own browser download is never used: the tests launch the system's
``/usr/bin/chromium`` (``JOBSTREAM_CHROMIUM`` overrides the path), which the project's
set-up installs (Makefile, .ci/run). With ``CI=true`` a missing browser fails the test;
elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Error, sync_playwright

from tests.support.tools import unavailable

CHROMIUM = Path(os.environ.get("JOBSTREAM_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip



@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        unavailable(f"no browser at {CHROMIUM}: apt-get install chromium (make setup does)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        except Error as exc:
            unavailable(f"chromium at {CHROMIUM} did not start: {exc}")
        try:
            yield browser
        finally:
            browser.close()
