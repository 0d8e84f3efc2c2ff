"""The documentation site builds in strict mode (a broken link, anchor or reference fails
it), its nav holds every page of docs/, the API reference holds the public API's
docstrings (mkdocs.yml; docs/reference.md), and the README's links lead somewhere."""

from __future__ import annotations

import html
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import jobstream

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    return []


def _text(page: Path) -> str:
    """A built page's words, its markup and spacing gone."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


def test_the_nav_holds_every_page_of_docs() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert set(_nav_pages(config["nav"])) == pages


def test_every_relative_link_of_the_readme_names_a_file() -> None:
    """The README is read on the repository's page, outside the site: its links to docs/
    are to files, which strict mode does not see."""
    targets = re.findall(r"\]\((?!https?://)([^)#\s]+)", (ROOT / "README.md").read_text())
    assert targets, "the README links to no page"
    assert [t for t in targets if not (ROOT / t).exists()] == []


@pytest.mark.usefixtures("child_processes")
def test_the_site_builds_strict_with_the_api_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # its banner on stderr
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    reference = _text(site / "reference" / "index.html")
    first_line = inspect.getdoc(jobstream.WorkerApp).splitlines()[0]  # type: ignore[union-attr]
    assert "WorkerApp" in reference and first_line in reference
    assert "decode_status" in reference, "jobstream.records is missing from the reference"
    assert (site / "getting-started" / "index.html").is_file()
