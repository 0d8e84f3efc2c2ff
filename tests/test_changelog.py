"""CHANGELOG.md is tied to the one version and to the released schemas.

Its newest entry is the version pyproject.toml sets (which ``jobstream --version`` and
``jobstream.__version__`` read from the installed metadata); each entry names the schema
versions it writes and reads, each one a folder of schemas/released/; every released
schema version is written by some release; and the schemas the code writes today are the
newest release's, unless an "Unreleased" entry at the top says what is coming.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jobstream
from jobstream._pipeline.serde.schemas import event_schemas

ROOT = Path(__file__).resolve().parent.parent
ENTRY = re.compile(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)\n\nSchemas: writes (v\d+); "
                   r"reads ((?:v\d+)(?:, v\d+)*)\.$", re.MULTILINE)  # fmt: skip


def entries(text: str) -> list[tuple[str, str, list[str]]]:
    """(version, written schema version, read schema versions), newest first."""
    return [(m[1], m[3], m[4].split(", ")) for m in ENTRY.finditer(text)]


def test_the_check_reads_an_entry() -> None:
    text = "## 1.2.3 (2026-01-02)\n\nSchemas: writes v3; reads v1, v2, v3.\n"
    assert entries(text) == [("1.2.3", "v3", ["v1", "v2", "v3"])]
    assert entries("## 1.2.3 (2026-01-02)\n\nno schemas line\n") == []


def test_the_newest_entry_is_the_installed_version() -> None:
    found = entries((ROOT / "CHANGELOG.md").read_text())
    assert found, "CHANGELOG.md has no entry in the '## X.Y.Z (date)' + 'Schemas:' form"
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert found[0][0] == declared == jobstream.__version__


def test_each_release_names_released_schemas_and_reads_what_it_writes() -> None:
    released = set(event_schemas().versions)
    found = entries((ROOT / "CHANGELOG.md").read_text())
    headings = re.findall(r"^## \d", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert len(found) == len(headings), "an entry lacks its 'Schemas:' line"
    for version, writes, reads in found:
        assert {writes, *reads} <= released, f"{version} names a schema version not released"
        assert writes in reads, f"{version} does not read what it writes"
    written = {writes for _, writes, _ in found}
    assert written == released, "a released schema version that no release writes"


def _schema_files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.glob("*.avsc")}


def test_the_schemas_written_today_are_the_newest_releases_or_an_entry_says_unreleased() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    _, writes, _ = entries(text)[0]
    schemas = ROOT / "schemas"
    if _schema_files(schemas) != _schema_files(schemas / "released" / writes):
        first = re.search(r"^## (.*)$", text, re.MULTILINE)
        assert first is not None and first[1].startswith("Unreleased"), (
            f"schemas/ differs from schemas/released/{writes}, which the newest release says "
            "it writes: add an '## Unreleased' entry at the top that says so")
