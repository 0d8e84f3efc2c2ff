"""Test tiers, marked from the fixtures a test uses.

A test whose fixture closure holds a broker (``kafka_bootstrap``, or the
``jobstream_broker`` of jobstream.pytest_plugin), a browser (``browser``) or a child
process (``child_processes``) is marked ``broker``, ``browser`` or ``processes``; a test
marked ``cluster`` counts as a broker test. Every other test is marked ``fast``: ``make
test-fast`` runs those alone (``-m fast``), with no broker, no browser and no child
process, in a couple of minutes.

The fast tier is held to it: while a ``fast`` test is set up, runs or is torn down,
starting a process (by ``subprocess``, ``os.fork``/``posix_spawn`` or ``multiprocessing``)
fails the test with a message that names the fixture to request. So a test cannot slip
into the fast tier by starting a broker or a child without a fixture saying so.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

SLOW_FIXTURES = {
    "kafka_bootstrap": "broker",
    "jobstream_broker": "broker",  # jobstream.pytest_plugin's
    "browser": "browser",
    "child_processes": "processes",
}
"""A fixture in a test's closure, and the tier marker it gives the test."""

TIERS = {
    "fast": "needs no broker, no browser and no child process (make test-fast)",
    "broker": "uses a Kafka broker (its fixture closure holds kafka_bootstrap)",
    "browser": "drives a browser (its fixture closure holds browser)",
    "processes": "starts child processes (its fixture closure holds child_processes)",
}


class ProcessStarted(AssertionError):
    """A fast-tier test started a process."""


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def tiers_of(item: pytest.Item) -> set[str]:
    """The slow tiers a collected test belongs to (none: it is fast)."""
    names = set(getattr(item, "fixturenames", ()))
    found = {tier for fixture, tier in SLOW_FIXTURES.items() if fixture in names}
    if item.get_closest_marker("cluster") is not None:
        found.add("broker")
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tiers = tiers_of(item) or {"fast"}
        for tier in sorted(tiers):
            item.add_marker(tier)


@pytest.fixture(scope="session")
def child_processes() -> None:
    """Request this in a test, or a fixture of any scope, that starts processes of its own
    (a CLI, a worker, a broker of its own, ...): it puts the test out of the fast tier."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """A fast test's set-up, call and teardown run with processes refused."""
    if item.get_closest_marker("fast") is None:
        return (yield)
    with no_processes(item.nodeid):
        return (yield)


@contextmanager
def no_processes(nodeid: str) -> Iterator[None]:
    """Refuse every way of starting a process while the block runs."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ProcessStarted(
            f"{nodeid} started a process but is in the fast tier: request the "
            "'child_processes' fixture (or 'kafka_bootstrap' for a broker)"
        )

    saved = {
        (subprocess.Popen, "_execute_child"): subprocess.Popen._execute_child,  # type: ignore[attr-defined]
        (multiprocessing.process.BaseProcess, "start"): multiprocessing.process.BaseProcess.start,
        (os, "fork"): os.fork,
        (os, "posix_spawn"): os.posix_spawn,
        (os, "posix_spawnp"): os.posix_spawnp,
    }
    try:
        for owner, name in saved:
            setattr(owner, name, refuse)
        yield
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)
