"""What a test needs of the machine: missing in CI, it fails the test; elsewhere it skips
it, saying what to install."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(message: str) -> NoReturn:
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def debian_tool(command: str, package: str) -> str:
    """The path of ``command``, which Debian's ``package`` installs (.ci/run does)."""
    found = shutil.which(command)
    if found is None:
        unavailable(f"{command} is not on PATH (Debian: apt-get install {package})")
    return found
