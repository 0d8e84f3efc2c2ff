"""Which test modules ``make test``'s xdist processes take together.

``--dist loadfile`` hands each module whole to one process, so a module-scoped stack is
started once. The packages below go further: their modules share package-scoped fixtures
(a pipeline stack, say), and each package goes whole to one process, so that the stack is
started once per run rather than once per process that happens to get one of its modules.
"""

from __future__ import annotations

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

ONE_PROCESS_PACKAGES = ("tests/keys/", "tests/connectors/dashboard/")
"""Packages whose modules share package-scoped fixtures: each runs in one xdist process."""


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its package if that is listed, else its module."""
    module = nodeid.split("::", 1)[0]
    return next((package for package in ONE_PROCESS_PACKAGES if module.startswith(package)),
                module)  # fmt: skip


class PackageOrFileScheduling(LoadFileScheduling):
    """xdist's loadfile, with the listed packages as one unit of work each."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadFileScheduling | None:
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own choice
    return PackageOrFileScheduling(config, log)
