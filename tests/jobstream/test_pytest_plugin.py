"""The examples of docs/workers.md, "Testing a handler" and "Checkpoints", run as a user's
test files: the handler tests with no broker (fast), the whole path through the plugin's
fixtures (broker). And the plugin's own parts with no broker: loading it starts nothing, a
worker that does not stop is told, a wait for a status keeps to its time."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn

import pytest

from jobstream._ops.kafka import session
from jobstream._pipeline.config import Settings, load_settings
from jobstream._pipeline.errors import JobstreamError
from jobstream._pipeline.status import query
from jobstream._pipeline.topics import Topics
from jobstream.pytest_plugin import MIN_READ_S, Pipeline, RunningWorker

DOC = Path(__file__).resolve().parents[2] / "docs" / "workers.md"


def example(name: str) -> str:
    """The docs' Python block that begins ``# <name> ...``."""
    found = re.search(rf"```python\n(# {re.escape(name)} .*?)```", DOC.read_text(), re.S)
    assert found is not None, f"docs/workers.md has no example {name}"
    return found.group(1)


def test_the_plugin_is_registered_and_starts_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inner runs share this process's modules: a broker asked for there is asked of
    the stand-in, which refuses (and a process started would fail this fast test)."""
    asked: list[Path] = []

    def refuse(home: Path, **options: object) -> NoReturn:
        asked.append(home)
        raise AssertionError("a broker was asked for")

    monkeypatch.setattr(session, "session_broker", refuse)
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("--fixtures", "-q")
    for fixture in ("jobstream_broker", "jobstream_pipeline", "jobstream_worker",
                    "jobstream_client"):  # fmt: skip
        assert fixture in result.stdout.str()
    pytester.runpytest_inprocess("-q").assert_outcomes(passed=1)
    assert asked == [], "a run whose tests ask for no fixture of the plugin asked for a broker"
    # the stand-in is the one the plugin asks: a test that wants the broker reaches it
    pytester.makepyfile(test_broker="def test_broker(jobstream_broker):\n    pass\n")
    pytester.runpytest_inprocess("-q", "test_broker.py").assert_outcomes(errors=1)
    assert len(asked) == 1


class _Loop:
    """What RunningWorker reads of a WorkerLoop."""

    options = SimpleNamespace(worker_id="pytest-stuck")


def test_a_worker_that_does_not_stop_is_named() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(30,), daemon=True)
    thread.start()
    worker = RunningWorker(_Loop(), thread, threading.Event(), [])  # type: ignore[arg-type]
    told = re.escape("the worker pytest-stuck did not stop within 0.1 s")
    try:
        with pytest.raises(AssertionError, match=told):
            worker.stop(timeout_s=0.1)
        assert worker.stopping.is_set()
    finally:
        release.set()
        thread.join(5)
    worker.stop(timeout_s=5)  # ended: nothing to tell


def test_waiting_for_a_status_reads_only_in_the_time_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each read of jobs.status is given what is left of the wait: a broker that never
    answers holds ``wait_for(timeout_s=2)`` about two seconds, not a read's 30 s."""
    given: list[float] = []

    def unanswered(settings: Settings, *, job_id: str, timeout_s: float = 30.0) -> NoReturn:
        given.append(timeout_s)
        time.sleep(timeout_s)
        raise JobstreamError(f"jobs.status not read to its end within {timeout_s:g} s")

    monkeypatch.setattr(query, "read_statuses", unanswered)
    settings = load_settings(topic_prefix="wait.")
    pipeline = Pipeline(settings, Topics(settings), stack=None)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(AssertionError, match=re.escape("not in ('SUCCEEDED',) after 2 s")):
        pipeline.wait_for("01ABC", "SUCCEEDED", timeout_s=2)
    assert time.monotonic() - started < 2 + MIN_READ_S + 1
    assert given == [pytest.approx(2, abs=0.5)]


def test_a_missing_status_topic_is_told_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(settings: Settings, *, job_id: str, timeout_s: float = 30.0) -> NoReturn:
        raise JobstreamError("topic wait.jobs.status not found")

    monkeypatch.setattr(query, "read_statuses", missing)
    settings = load_settings(topic_prefix="wait.")
    pipeline = Pipeline(settings, Topics(settings), stack=None)  # type: ignore[arg-type]
    with pytest.raises(JobstreamError, match="not found"):
        pipeline.wait_for("01ABC", "SUCCEEDED", timeout_s=30)


def test_the_docs_handler_tests_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_jobs=example("test_jobs.py"))
    result = pytester.runpytest_inprocess("-q")
    result.assert_outcomes(passed=3)


def test_the_docs_checkpoint_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_import=example("test_import.py"))
    result = pytester.runpytest_inprocess("-q")
    result.assert_outcomes(passed=1)


def test_a_users_job_goes_through_the_pipeline(
    pytester: pytest.Pytester, kafka_bootstrap: str, child_processes: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The user's test file runs in a pytest of its own, its broker the session's."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    pytester.makepyfile(test_pipeline=example("test_pipeline.py"))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=1)
