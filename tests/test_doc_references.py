"""Every file a module's docstrings and comments send the reader to exists.

A path such as ``pipeline/timers/logic.py`` (or ``docs/fairness.md``, ``tests/...``) and a
``:mod:`` reference such as ``:mod:`jobstream._pipeline.status.machine``` in pipeline/,
connectors/ or ops/ must name a file or package of the repository: a rename that leaves one behind
fails here, naming the module and the line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipeline", "connectors", "ops")

PATH = re.compile(r"(?<![\w/.-])((?:pipeline|connectors|ops|tests|docs|schemas)/[\w/.<>*{}-]*)")
"""A repository path: a top-level folder, then the rest of the word (its trailing dots and
dashes are the sentence's). A pattern (``schemas/io.jobstream.<Name>.avsc``) or a glob is
not a path."""
MODULE = re.compile(r":mod:`~?(jobstream(?:\.\w+)+)`")


def _exists(path: str) -> bool:
    return (ROOT / path).exists()


def _module_exists(dotted: str) -> bool:
    base = ROOT / dotted.replace(".", "/")  # jobstream/_pipeline links to pipeline/
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def dangling(text: str) -> list[str]:
    """The paths and modules named in ``text`` that the repository does not hold."""
    missing = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".-")
        if not any(ch in path for ch in "<>*{}") and not _exists(path):
            missing.append(path)
    missing += [m for m in MODULE.findall(text) if not _module_exists(m)]
    return missing


def test_the_check_sees_a_missing_file_and_a_missing_module() -> None:
    text = ("see pipeline/timers/fair.py and :mod:`jobstream._pipeline.timers.runner`,"
            " not pipeline/limits/ nor schemas/io.jobstream.<Name>.avsc")
    assert dangling(text) == ["pipeline/timers/fair.py", "jobstream._pipeline.timers.runner"]


def test_every_referenced_file_exists() -> None:
    found = []
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(module.read_text().splitlines(), 1):
                found += [f"{module.relative_to(ROOT)}:{number}: {name}"
                          for name in dangling(line)]  # fmt: skip
    assert not found, "references to files that do not exist:\n" + "\n".join(found)
