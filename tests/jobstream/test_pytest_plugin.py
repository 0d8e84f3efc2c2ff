"""The examples of docs/workers.md, "Testing a handler", run as a user's test files: the
handler test with no broker (fast), the whole path through the plugin's fixtures (broker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "workers.md"


def example(name: str) -> str:
    """The docs' Python block that begins ``# <name> ...``."""
    found = re.search(rf"```python\n(# {re.escape(name)} .*?)```", DOC.read_text(), re.S)
    assert found is not None, f"docs/workers.md has no example {name}"
    return found.group(1)


def test_the_plugin_is_registered_and_starts_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("--fixtures", "-q")
    for fixture in ("jobstream_broker", "jobstream_pipeline", "jobstream_worker",
                    "jobstream_client"):  # fmt: skip
        assert fixture in result.stdout.str()
    assert pytester.runpytest_inprocess("-q").ret == 0


def test_the_docs_handler_tests_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_jobs=example("test_jobs.py"))
    result = pytester.runpytest_inprocess("-q")
    result.assert_outcomes(passed=3)


def test_a_users_job_goes_through_the_pipeline(
    pytester: pytest.Pytester, kafka_bootstrap: str, child_processes: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The user's test file runs in a pytest of its own, its broker the session's."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    pytester.makepyfile(test_pipeline=example("test_pipeline.py"))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=1)
