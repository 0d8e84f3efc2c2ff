"""The test tiers: marked from the fixtures a test uses, and a fast test kept from starting
a process (tests/support/tiers.py), checked on a small suite of its own in this process."""

from __future__ import annotations

import pytest

SUITE = '''
import pathlib
import subprocess
import sys

import pytest


@pytest.fixture(scope="session")
def kafka_bootstrap():
    pathlib.Path("broker-started").touch()  # stands for a broker's start
    return "127.0.0.1:9"


@pytest.fixture
def settings(kafka_bootstrap):
    return {"bootstrap": kafka_bootstrap}


def test_pure():
    assert 1 + 1 == 2


def test_through_a_fixture(settings):
    assert settings["bootstrap"]


def test_starts_a_process_unannounced():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.usefixtures("child_processes")
def test_starts_a_process_announced():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.cluster
def test_on_a_cluster():
    pass
'''


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nmarkers =\n    cluster: a 3-node cluster\n")
    return pytester


def selected(result: pytest.RunResult) -> set[str]:
    return {line.split("::")[1].split(" ")[0] for line in result.outlines
            if line.startswith("test_suite.py::")}  # fmt: skip


def test_the_fast_tier_holds_only_tests_with_no_broker_browser_or_process(
    suite: pytest.Pytester,
) -> None:
    fast = suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "fast",
                                     "--collect-only", "-q")  # fmt: skip
    assert selected(fast) == {"test_pure", "test_starts_a_process_unannounced"}
    rest = suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "not fast",
                                     "--collect-only", "-q")  # fmt: skip
    assert selected(rest) == {"test_through_a_fixture", "test_starts_a_process_announced",
                              "test_on_a_cluster"}  # fmt: skip
    broker = suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "broker",
                                       "--collect-only", "-q")  # fmt: skip
    assert selected(broker) == {"test_through_a_fixture", "test_on_a_cluster"}


def test_a_fast_test_that_starts_a_process_fails_naming_the_fixture(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "fast")
    result.assert_outcomes(passed=1, failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        "*ProcessStarted: test_suite.py::test_starts_a_process_unannounced started a process "
        "but is in the fast tier: request the 'child_processes' fixture*",
    ])  # fmt: skip


def test_the_fast_tier_starts_no_broker(suite: pytest.Pytester) -> None:
    suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "fast")
    assert not (suite.path / "broker-started").exists()


@pytest.mark.usefixtures("child_processes")
def test_the_other_tiers_start_the_broker_and_their_processes(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess("-p", "tests.support.tiers", "-m", "not fast")
    result.assert_outcomes(passed=3, deselected=2)
    assert (suite.path / "broker-started").exists()
