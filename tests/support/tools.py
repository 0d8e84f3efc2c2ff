"""What a test needs of the machine: missing in CI, it fails the test; elsewhere it skips
it, saying what to install."""

from __future__ import annotations

import shutil

from jobstream.pytest_plugin import IN_CI as IN_CI
from jobstream.pytest_plugin import unavailable as unavailable


def debian_tool(command: str, package: str) -> str:
    """The path of ``command``, which Debian's ``package`` installs (.ci/run does)."""
    found = shutil.which(command)
    if found is None:
        unavailable(f"{command} is not on PATH (Debian: apt-get install {package})")
    return found
